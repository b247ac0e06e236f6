"""Every `discoverygym` command the docs show works or stops with one clear line, and
leaves nothing in the working directory that it was not asked to write.

Each command of the bash blocks of README.md, docs/*.md and the READMEs under src/ (the
suites', the doors', the sandbox's) runs as written from an empty folder, in a
subprocess, through the installed entry point. `run` and `calibrate` get `--dry-run`
(the command is checked and planned, nothing played: full runs are minutes each; the
suites' own tests play them); commands with placeholder paths must end in one `error:`
line, never a traceback. A usage synopsis (a line with `[optional]` words) is not a
command and is skipped. Afterwards the folder may hold `runs/` and the paths the command
names, nothing else (no `outputs/`, `trials/`, `report.html`, `logs/` it was not asked
for). Harbor is not installed here, so its commands in the docs are checked to name where
Harbor writes (`--trials-dir`, `--jobs-dir`) instead of run. docs/doors.md's examples
also run in full in test_doors_doc.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testpaths import REPO

ROOT = REPO
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "src" / "discoverygym").rglob("README.md"))]
PLANNED_ONLY = {"run", "calibrate"}
SLOW = {"audit"}  # plays the cheating agents through a real interpreter: about a minute
ALWAYS_ALLOWED = {"runs"}  # where every command writes by default


def _shell_lines(path: Path) -> list[list[str]]:
    """The command lines of the bash blocks of `path`, as words (comments, redirections
    and leading environment assignments dropped; continuation lines joined)."""
    lines: list[list[str]] = []
    for block in re.findall(r"```bash\n(.*?)```", path.read_text(), re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" # ", 1)[0].split(" > ", 1)[0].strip()  # comment, redirect
            # a placeholder such as <published commitment> is one word
            line = re.sub(r"<[^<>]*>", lambda m: m.group(0).replace(" ", "-"), line)
            words = shlex.split(line) if line and not line.startswith("#") else []
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # an environment assignment before the command
            if words:
                lines.append(words)
    return lines


def doc_commands() -> list[tuple[str, str]]:
    """(document, command) for every `discoverygym` command of the docs, synopses left out."""
    found = []
    for path in DOCS:
        for words in _shell_lines(path):
            if words[0] == "discoverygym" and not any(w.startswith("[") for w in words):
                found.append((str(path.relative_to(ROOT)), shlex.join(words)))
    return found


def readme_commands() -> list[str]:
    return [command for doc, command in doc_commands() if doc == "README.md"]


def test_the_readme_shows_commands():
    commands = readme_commands()
    assert len(commands) >= 15 and any(c.startswith("discoverygym run ") for c in commands)


def test_the_other_docs_show_commands_too():
    docs = {doc for doc, _ in doc_commands()}
    assert {"docs/doors.md", "src/discoverygym/suites/tpbench/README.md",
            "src/discoverygym/doors/harbor/README.md"} <= docs


def _allowed_paths(words: list[str]) -> set[str]:
    """The top-level names a command may create: runs/, and the first part of any
    relative path among its words (an --out, an export folder, a scaffold's name)."""
    allowed = set(ALWAYS_ALLOWED)
    for word in words[1:]:
        value = word.split("=", 1)[-1]
        if value and not value.startswith(("-", "/")):
            allowed.add(Path(value).parts[0])
    return allowed


def test_only_runs_and_the_paths_a_command_names_may_appear():
    report = ["discoverygym", "report", "runs/my-run", "-o", "report.html"]
    assert {"runs", "report.html"} <= _allowed_paths(report)
    for stray in ("report.html", "trials", "outputs", "jobs", "logs"):
        assert stray not in _allowed_paths(report[:3])
    assert "datasets" in _allowed_paths(["discoverygym", "export", "harbor", "gravity",
                                         "datasets/discoverygym"])


@pytest.mark.parametrize("doc, command", [
    pytest.param(d, c, marks=pytest.mark.slow) if shlex.split(c)[1] in SLOW else (d, c)
    for d, c in doc_commands()])
def test_doc_command_works_or_says_why_in_one_line_and_leaves_no_stray_files(
        doc, command, tmp_path):
    words = shlex.split(command)
    if words[1] in PLANNED_ONLY:
        words.append("--dry-run")
    env = dict(os.environ, COLUMNS="200", LOCAL_API_KEY="none")
    env.pop("DISCOVERYGYM_PLUGINS", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    both = done.stdout + done.stderr
    assert "Traceback" not in both and "╭" not in both, (doc, both[-3000:])
    if done.returncode != 0:
        errors = [line for line in both.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, (doc, command, both[-3000:])
    stray = {p.name for p in tmp_path.iterdir()} - _allowed_paths(words)
    assert not stray, f"{command} ({doc}) left {sorted(stray)} in the working directory"


def test_harbor_commands_in_the_docs_say_where_harbor_writes():
    """`harbor trial start` writes trials/ and `harbor run` jobs/ into the working
    directory unless told where: every such command of the docs tells it."""
    seen = 0
    for path in DOCS:
        for words in _shell_lines(path):
            if words[:1] != ["harbor"] or words[1:2] not in (["run"], ["trial"]):
                continue
            seen += 1
            needed = "--jobs-dir" if words[1] == "run" else "--trials-dir"
            assert needed in words or "-o" in words, f"{path.name}: {shlex.join(words)}"
    assert seen >= 3
