"""docs/doors.md's examples run as written, each from an empty folder, on a real
gravity episode: the scripted runner, Inspect, an MCP client, Gymnasium. (The OpenEnv
section runs in its own environment: tests/doors/openenv/test_openenv_door.py.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

import discoverygym
from testpaths import REPO

DOC = REPO / "docs" / "doors.md"


def _blocks(heading: str, language: str) -> list[str]:
    """The `language` code blocks of the section whose heading starts with `heading`."""
    section = DOC.read_text().split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]
    return [part.split("```", 1)[0] for part in section.split(f"```{language}\n")[1:]]


def _env() -> dict[str, str]:
    """The doc's commands as a user has them: this interpreter's scripts on PATH, and
    no test plugin (other test modules register the toy suite for their processes)."""
    env = dict(os.environ)
    env.pop("DISCOVERYGYM_PLUGINS", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _shell(line: str, cwd: Path) -> str:
    done = subprocess.run(shlex.split(line), cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, (line, done.stdout[-1500:], done.stderr[-1500:])
    return done.stdout


def _python(code: str, cwd: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _installed_is_tested_tree() -> bool:
    """Inspect finds `discoverygym/<suite>` through the installed distribution's entry
    point; it misses it when PYTHONPATH puts another checkout first."""
    info = json.loads(distribution("discoverygym").read_text("direct_url.json") or "{}")
    root = info.get("url", "").removeprefix("file://")
    return bool(root) and Path(discoverygym.__file__).resolve().is_relative_to(
        Path(root).resolve())


def test_the_scripted_runner_example(tmp_path):
    [block] = _blocks("Scripted agents", "bash")
    _shell(block.strip(), tmp_path)
    [record] = _records(tmp_path / "runs" / "doors-run" / "records.jsonl")
    assert record["passed"] and record["agent"] == "expert-adaptive"


def test_the_inspect_examples(tmp_path):
    [block] = _blocks("Inspect AI", "bash")
    run, inspect_eval = block.strip().splitlines()
    _shell(run, tmp_path)
    [record] = _records(tmp_path / "runs" / "doors-inspect" / "records.jsonl")
    assert record["passed"] and record["model"] == "discoverygym/expert"
    if not _installed_is_tested_tree():
        pytest.skip("`inspect eval` needs this checkout installed (pip install -e .); "
                    "PYTHONPATH points at another one")
    _shell(inspect_eval, tmp_path)
    assert list((tmp_path / "runs" / "inspect-logs").glob("*.eval"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]  # no ./logs left behind


def test_the_mcp_examples(tmp_path):
    [config] = _blocks("MCP", "json")
    [client] = _blocks("MCP", "python")
    server = json.loads(config)["mcpServers"]["discoverygym"]
    assert f'command="{server["command"]}"' in client
    assert all(f'"{arg}"' in client for arg in server["args"])  # one server, both forms
    lines = _python(client, tmp_path)
    assert lines[0] == "['observe', 'python', 'submit']"
    assert lines[-1] == "3"
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["answer"] == 1e8 and record["usage"]["submissions"] == 1


def test_the_gymnasium_example(tmp_path):
    [block] = _blocks("Gymnasium", "python")
    lines = _python(block, tmp_path)
    assert lines == ["['observe', 'submit'] [97.]", "True 0.0 False"]
