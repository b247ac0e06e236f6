"""Every `discoverygym` command the README shows works or stops with one clear line.

Each command of the README's bash blocks runs as written from an empty folder, in a
subprocess, through the installed entry point. `run` and `calibrate` get `--dry-run`
(the command is checked and planned, nothing played: full runs are minutes each; the
suites' own tests play them); commands with placeholder paths must end in one `error:`
line, never a traceback. docs/doors.md's examples run in full in test_doors_doc.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from testpaths import REPO

README = REPO / "README.md"
PLANNED_ONLY = {"run", "calibrate"}
SLOW = {"audit"}  # plays the cheating agents through a real interpreter: about a minute


def readme_commands() -> list[str]:
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" # ", 1)[0].split(" > ", 1)[0].strip()  # comment, redirect
            # a placeholder such as <published commitment> is one word
            line = re.sub(r"<[^<>]*>", lambda m: m.group(0).replace(" ", "-"), line)
            words = shlex.split(line) if line else []
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]  # an environment assignment before the command
            if words and words[0] == "discoverygym":
                lines.append(shlex.join(words))
    return lines


def test_the_readme_shows_commands():
    commands = readme_commands()
    assert len(commands) >= 15 and any(c.startswith("discoverygym run ") for c in commands)


@pytest.mark.parametrize("command", [
    pytest.param(c, marks=pytest.mark.slow) if shlex.split(c)[1] in SLOW else c
    for c in readme_commands()])
def test_readme_command_works_or_says_why_in_one_line(command, tmp_path):
    words = shlex.split(command)
    if words[1] in PLANNED_ONLY:
        words.append("--dry-run")
    env = dict(os.environ, COLUMNS="200", LOCAL_API_KEY="none")
    env.pop("DISCOVERYGYM_PLUGINS", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(words, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    both = done.stdout + done.stderr
    assert "Traceback" not in both and "╭" not in both, both[-3000:]
    if done.returncode != 0:
        errors = [line for line in both.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, (command, both[-3000:])
