"""Exported tasks through Harbor itself: `harbor lint`, and oracle, no-op and hostile
trials under the bubblewrap environment (tools/harbor_bwrap.py), no Docker.

Harbor needs Python >= 3.12 and lives in its own virtual environment (`make
harbor-venv` makes .venv-harbor; DISCOVERYGYM_HARBOR_VENV names another); without it,
or without a working bubblewrap, these tests skip and say why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import discoverygym
from discoverygym.core import EpisodeSpec
from discoverygym.doors.harbor import export_tasks
from testpaths import REPO

VENV = Path(os.environ.get("DISCOVERYGYM_HARBOR_VENV") or REPO / ".venv-harbor")
HARBOR = VENV / "bin" / "harbor"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not HARBOR.exists(), reason=f"no Harbor at {HARBOR} (Python 3.12 "
                       "venv): run `make harbor-venv` or set DISCOVERYGYM_HARBOR_VENV"),
    pytest.mark.skipif(shutil.which("bwrap") is None or subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-net", "true"],
        capture_output=True).returncode != 0, reason="bubblewrap is missing or cannot run "
        "here (apt-get install bubblewrap)"),
]

SPECS = [EpisodeSpec("gravity", "period", 0, {"world": "A", "protocol": "full-obs"}),
         EpisodeSpec("packages", "binary-drag-timescale", 0, {})]
LIVE = EpisodeSpec("gravity", "period", 0, {"world": "B", "protocol": "budget-obs-100"})
#: Rules `harbor lint` can check without the Docker CLI (the compose ones need it).
NO_DOCKER_RULES = ["unknown-config-field", "shared-verifier", "artifact-log-overlap",
                   "overlapping-artifacts", "unpinned-python-dependency",
                   "verifier-runtime-install", "verifier-network-download",
                   "agent-image-test-leak", "root-agent"]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    out = tmp_path_factory.mktemp("harbor-tasks")
    done = {}
    for spec in [*SPECS, LIVE]:
        (task,) = export_tasks(spec.suite, out, specs=[spec])
        done[(spec.suite, task.kind)] = task.path
    return done


def _harbor(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "tools")}
    env.pop("VIRTUAL_ENV", None)
    env.pop("DISCOVERYGYM_PLUGINS", None)  # set by other test modules for their processes
    return subprocess.run([str(HARBOR), *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def _trial(task_dir: Path, agent: str, trials: Path) -> dict:
    """Run one Harbor trial under bubblewrap; the verifier's image gets this Python and
    this discoverygym, the agent's neither."""
    python_paths = ":".join(dict.fromkeys([sys.prefix, sys.base_prefix]))
    source = Path(discoverygym.__file__).resolve().parents[1]
    result = _harbor("trial", "start", "-p", str(task_dir), "-a", agent,
                     "-e", "harbor_bwrap:BwrapEnvironment",
                     "--environment-kwarg", f"python_paths={python_paths}",
                     "--environment-kwarg", f"pythonpath={source}",
                     "--trials-dir", str(trials), cwd=trials.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    (found,) = list(trials.glob("*/result.json"))
    outcome = json.loads(found.read_text())
    stdout = found.parent / "verifier" / "test-stdout.txt"
    outcome["verdict"] = stdout.read_text() if stdout.exists() else ""
    return outcome


def test_harbor_lint_passes(tasks):
    for key, path in tasks.items():
        if key[1] == "file":
            result = _harbor("lint", str(path), cwd=path.parent)
        else:  # compose tasks: the rules that need no Docker CLI
            result = _harbor("lint", str(path), *[a for rule in NO_DOCKER_RULES
                                                  for a in ("--select", rule)], cwd=path.parent)
        assert result.returncode == 0, (key, result.stdout, result.stderr)


@pytest.mark.parametrize("suite", ["gravity", "packages"])
def test_oracle_scores_one_and_no_op_zero(tasks, tmp_path, suite):
    oracle = _trial(tasks[(suite, "file")], "oracle", tmp_path / "oracle")
    assert oracle["exception_info"] is None, oracle["exception_info"]
    assert oracle["verifier_result"]["rewards"]["reward"] == 1.0, oracle["verdict"]
    nop = _trial(tasks[(suite, "file")], "nop", tmp_path / "nop")
    assert nop["verifier_result"]["rewards"]["reward"] == 0.0
    assert "passed=False" in nop["verdict"] and "error=-" not in nop["verdict"]


HOSTILE = {
    # a link to where the verifier keeps the full record (truth included)
    "symlink": "ln -s /logs/verifier/record.json /app/answer.json",
    "huge": "head -c 10000000 /dev/zero | tr '\\0' ' ' > /app/answer.json && "
            "printf '{\"answer\": 1}' >> /app/answer.json",
    "deep": "python3 -c \"print('{\\\"answer\\\": ' + '[' * 100000 + ']' * 100000 + '}')\" "
            "> /app/answer.json",
}
REASONS = {"symlink": "answer file", "huge": "bytes", "deep": "nested"}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_answer_file_scores_zero_with_a_reason(tasks, tmp_path, kind):
    task = tmp_path / "task"
    shutil.copytree(tasks[("gravity", "file")], task)
    (task / "solution" / "solve.sh").write_text(f"#!/bin/sh\n{HOSTILE[kind]}\n")
    outcome = _trial(task, "oracle", tmp_path / "trials")
    assert outcome["verifier_result"]["rewards"]["reward"] == 0.0, outcome["verdict"]
    assert REASONS[kind] in outcome["verdict"], outcome["verdict"]
