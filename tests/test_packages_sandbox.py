"""An agent's sandboxed interpreter cannot reach a package's evaluation/ folder: not by
its absolute path, not relative to the data it was given, not by searching the disk."""

from __future__ import annotations

import json

import pytest

from discoverygym.adapters.interpreter_tool import InterpreterTool
from discoverygym.core import get_suite
from discoverygym.sandbox import SandboxConfig
from discoverygym.sandbox.isolation import WEAK_LEVELS, resolve_level
from discoverygym.suites.packages.suite import CATALOG

PROBE = r"""
import json, os
found, opened = [], []
for target in TARGETS:
    try:
        with open(target, "rb") as fh:
            opened.append((target, len(fh.read())))
    except OSError as exc:
        pass
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in ("/proc", "/sys", "/dev")]
    if "ground_truth" in dirs or "evaluator.py" in files:
        found.append(top)
print(json.dumps({"opened": opened, "found": found, "data_dir": DATA_DIR}))
"""


def test_sandboxed_agent_cannot_read_evaluation():
    if resolve_level(SandboxConfig()) in WEAK_LEVELS:
        pytest.skip("no file isolation on this host (rlimits-only sandbox)")
    episode = get_suite("packages").episode("gravity-force-law")
    view = episode.view()
    data_dir = view.workspace()["DATA_DIR"]
    targets = [str(CATALOG / "gravity-force-law/evaluation/evaluator.py"),
               str(CATALOG / "gravity-force-law/evaluation/ground_truth/system_1/answer.json"),
               f"{data_dir}/../evaluation/evaluator.py",
               f"{data_dir}/../../evaluation/ground_truth/system_1/answer.json"]
    tool = InterpreterTool(episode, time_limit_s=120, cpu_s=120)
    try:
        result = tool.run(f"TARGETS = {json.dumps(targets)}\n" + PROBE)
    finally:
        tool.close()
        episode.record(agent="probe")
    assert not result.is_error, result.text
    report = json.loads(result.text.strip().splitlines()[-1])
    assert report["opened"] == [] and report["found"] == []
    # The probe really ran with the episode's workspace (not a vacuous pass).
    assert report["data_dir"] == data_dir
