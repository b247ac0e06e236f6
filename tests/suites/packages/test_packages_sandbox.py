"""An agent's sandboxed interpreter cannot reach a package's evaluation/ folder: not by
its absolute path, not relative to the data it was given, not by searching the disk."""

from __future__ import annotations

import json
import sys

import pytest

from discoverygym.core import get_suite
from discoverygym.doors.shared.interpreter_tool import InterpreterTool
from discoverygym.sandbox import SandboxConfig
from discoverygym.sandbox.isolation import WEAK_LEVELS, _level_works, resolve_level
from discoverygym.suites.packages.shipped import CATALOG

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


STRONG = [level for level in ("bubblewrap", "unshare")
          if _level_works(level, sys.executable)]


@pytest.mark.skipif(not STRONG, reason="no file isolation on this host (rlimits-only sandbox)")
@pytest.mark.parametrize("level", STRONG)
def test_sandboxed_agent_reads_data_and_writes_outputs(level):
    """The interpreter sees DATA_DIR (read-only) and OUTPUT_DIR (writable) at the paths
    its variables hold, so binary data and outputs need no detour through file tools;
    what it writes is what `evaluate` scores."""
    episode = get_suite("packages").episode("gravity-force-law")
    workspace = episode.view().workspace()
    code = r"""
import json, os, pathlib
data = sorted(str(p.relative_to(DATA_DIR)) for p in pathlib.Path(DATA_DIR).rglob("*.csv"))
try:
    open(os.path.join(DATA_DIR, "planted.txt"), "w").write("x")
    data_writable = True
except OSError:
    data_writable = False
out = pathlib.Path(OUTPUT_DIR) / "system_1"
out.mkdir(parents=True, exist_ok=True)
(out / "note.txt").write_text("written in the sandbox")
print(json.dumps({"data": data, "data_writable": data_writable}))
"""
    tool = InterpreterTool(episode, time_limit_s=60, isolation=level)
    try:
        result = tool.run(code)
        second = tool.run("print(open(OUTPUT_DIR + '/system_1/note.txt').read())")
    finally:
        tool.close()
    assert not result.is_error, result.text
    report = json.loads(result.text.strip().splitlines()[-1])
    assert "data/system_1/trajectory.csv" in report["data"]
    assert report["data_writable"] is False
    written = episode.call("read_file", {"path": "output:system_1/note.txt"})
    assert not written.is_error and "written in the sandbox" in written.text
    assert "written in the sandbox" in second.text
    # the prompt names the variables, not the random temporary paths (deterministic)
    assert "OUTPUT_DIR" in episode.prompt and workspace["OUTPUT_DIR"] not in episode.prompt
    episode.record(agent="probe")


def test_a_bind_that_would_expose_a_hidden_path_is_refused(tmp_path):
    from discoverygym.core import paths
    from discoverygym.sandbox import Interpreter
    from discoverygym.sandbox.isolation import SandboxUnavailable

    cache_parent = str(paths.cache_root().parent)
    with pytest.raises(SandboxUnavailable, match="hidden path"):
        Interpreter({}, SandboxConfig(ro_binds=(cache_parent,)))
    with pytest.raises(SandboxUnavailable, match="not a directory"):
        Interpreter({}, SandboxConfig(rw_binds=(str(tmp_path / "missing"),)))
