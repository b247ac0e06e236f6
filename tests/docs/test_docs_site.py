"""The documentation site: `mkdocs build --strict` passes (a broken link, a page left out
of the navigation or a missing README fails it), the README stays a short user's guide,
every command group's help names all of its commands, and what a user's run leaves in
the checkout (keys, runs, built sites and wheels) is ignored by git."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer

from testpaths import REPO

MKDOCS = Path(sys.executable).parent / "mkdocs"


def test_the_site_builds_strictly(tmp_path):
    if not MKDOCS.exists():
        pytest.skip("mkdocs is not installed (the [docs] extra, part of [dev])")
    done = subprocess.run([str(MKDOCS), "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for page in ("index.html", "keys/index.html", "suites/gravity/index.html",
                 "doors/harbor/index.html", "sandbox/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_docs_page_is_in_the_navigation():
    nav = (REPO / "mkdocs.yml").read_text()
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages and all(f": {page}" in nav for page in pages), pages


def test_the_readme_is_a_short_guide_that_points_at_the_docs():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in (REPO / "docs").glob("*.md"):
        if page.name != "index.md":
            assert f"(docs/{page.name})" in readme, f"the README does not link {page.name}"
    assert "make demo" in readme and "make test" in readme
    assert "package generate" in readme


def _groups(command: click.Command, path=("discoverygym",)):
    if isinstance(command, click.Group):
        yield path, command
        for name, sub in command.commands.items():
            yield from _groups(sub, (*path, name))


def test_every_command_group_help_names_all_its_commands():
    """A group whose description names two or more of its commands names every one (the
    packages group once listed 6 of its 9)."""
    from discoverygym.cli import app

    root = typer.main.get_command(app)
    for path, group in _groups(root):
        names = set(group.commands)
        text = group.help or ""
        named = {n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)}
        assert len(named) < 2 or named == names, (" ".join(path), sorted(names - named))
        ctx = click.Context(group, info_name=" ".join(path))
        assert set(group.list_commands(ctx)) == names


def test_outputs_of_a_users_run_are_ignored_by_git(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    paths = ["eval.key", "sub/held-out.key", "runs/x/records.jsonl", "site/index.html",
             "dist/discoverygym-0.1.0.whl", ".venv-openenv/bin/python"]
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert set(done.stdout.split()) == set(paths), done.stdout + done.stderr


def test_make_test_fast_installs_the_dev_extras_when_pytest_is_missing():
    """After `make demo` (the bare package) `make test-fast` used to stop at 'No module
    named pytest': its recipe installs the dev extras first when pytest or xdist is
    missing, and only then."""
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\ntest-fast:", 1)[1].split("\n\n", 1)[0]
    lines = [line.strip() for line in recipe.splitlines()[1:]]
    assert lines[0] == ('@$(BIN)/python -c "import pytest, xdist" 2>/dev/null '
                        '|| $(MAKE) install-dev')
    assert lines[1].startswith("$(BIN)/python -m pytest")
