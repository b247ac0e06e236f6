"""`discoverygym --version` (the version, the commit, the extras installed) and the wheel
lane's wiring (issue #36 item 1). The lane itself builds and installs a wheel (minutes):
`make test` runs it through `make test-wheel`; here only that it is there and wired."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from discoverygym import __version__
from discoverygym.cli import app
from discoverygym.core import about

ROOT = Path(__file__).resolve().parents[2]
LANE = ROOT / "tools" / "wheel_smoke.sh"
runner = CliRunner()


def test_version_prints_version_commit_and_extras():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"discoverygym {__version__}"
    assert lines[1].startswith("commit ")
    assert any(line.startswith("extras installed: ") for line in lines)


def test_the_commit_comes_from_the_checkout_when_there_is_one():
    if not (ROOT / ".git").exists():  # a source tree without git: nothing to compare
        return
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    commit = about.checkout_commit()
    assert commit is not None and head.startswith(commit.removesuffix("+dirty"))
    assert about.commit_line().endswith("(from the checkout)")


def test_a_built_package_names_the_commit_it_recorded(tmp_path):
    """An installed wheel has no checkout around it: the commit is the one setup.py
    wrote into the package; a file that is not a commit is not repeated."""
    package = tmp_path / "site-packages" / "discoverygym"
    package.mkdir(parents=True)
    assert about.checkout_commit(package) is None
    assert about.commit_line(package) == "commit unknown"
    (package / about.COMMIT_FILE).write_text("0123456789ab\n")
    assert about.commit_line(package) == "commit 0123456789ab (recorded when the package was built)"
    (package / about.COMMIT_FILE).write_text("[red]not a commit[/red]\n")
    assert about.commit_line(package) == "commit unknown"


def test_extras_are_read_from_the_requirements_including_nested_extras():
    requires = [
        'numpy>=1.26,<3',
        'pytest>=8; extra == "dev"',
        'no-such-distribution-xyz>=1; extra == "ghost"',
        'discoverygym[dev]; extra == "all"',
        'discoverygym[ghost,dev]; extra == "everything"',
    ]
    installed, missing = about.extras_installed(requires)
    assert installed == ["all", "dev"]
    assert missing == ["everything", "ghost"]


def test_the_wheel_lane_is_a_script_wired_into_make_test():
    assert LANE.is_file() and LANE.stat().st_mode & 0o111, "tools/wheel_smoke.sh is executable"
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe and "$(MAKE) test-wheel" in recipe.group(1)
    target = re.search(r"^test-wheel:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert target and "tools/wheel_smoke.sh" in target.group(1)
    text = LANE.read_text()
    # what the lane must cover: build + twine, a fresh venv with [all], every suite's run
    # and audit, a keyed run and verify, one generated package, the readers
    for needed in ("-m build", "twine check", "-m venv", "[all]", "key new", " verify ",
                   "package generate", "--count 1", " report ", " leaderboard "):
        assert needed in text, needed
    for suite in ("gravity", "stargazer", "mad", "tpbench", "packages"):
        assert f"run {suite} " in text, suite
    assert re.search(r"for suite in gravity stargazer mad tpbench packages; do\n\s+step "
                     r'"\$DG" audit "\$suite"', text)
    assert "set -euo pipefail" in text and "trap cleanup EXIT" in text


def test_the_lane_builds_outside_the_checkout_and_refuses_a_temp_folder_inside_it(tmp_path):
    """TMPDIR inside the checkout would install and run next to the sources: refused
    before anything is built."""
    inside = ROOT / "build" / f"wheel-lane-test-{tmp_path.name}"  # build/ is ignored by git
    inside.mkdir(parents=True)
    try:
        done = subprocess.run(["bash", str(LANE), sys.executable], capture_output=True,
                              text=True, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(inside)},
                              timeout=60)
        assert done.returncode == 1
        assert "lies in the checkout" in done.stderr
        assert not list(inside.iterdir()), "the lane leaves nothing behind"
    finally:
        shutil.rmtree(inside, ignore_errors=True)
