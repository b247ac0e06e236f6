"""Reorganising the code changes no record: a fixed sample of every suite, played by
scripted baselines on fixed seeds, gives the records committed in
tests/data/golden_records.json (written by tools/golden_records.py), value for value,
floats exactly, and shows the agent the same prompt and workspace (a digest). A change of behaviour that is meant regenerates the file with the tool
and says so in its commit."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest

from testpaths import REPO

TOOL = REPO / "tools" / "golden_records.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location("golden_records", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


golden_tool = _load_tool()
GOLDEN = json.loads(golden_tool.GOLDEN_PATH.read_text())
GOLDEN_MACHINE = json.loads(golden_tool.MACHINE_PATH.read_text())
#: Between numerical machines that differ (numpy's SIMD kernels, BLAS, XLA's target CPU,
#: library versions) simulated data differ in their last digits, so records are compared
#: to these tolerances and the digests of raw data are not compared (README "Tests").
OTHER_MACHINE_REL, OTHER_MACHINE_ABS = 1e-5, 1e-9
DIGEST_KEYS = {"seen_by_agent", "sha256"}


def _differences(actual, expected, path="record", exact=True):
    """The paths at which two JSON values differ (for a readable failure). Not `exact`:
    floats within the other-machine tolerances agree and digests are not compared."""
    if isinstance(actual, dict) and isinstance(expected, dict):
        out = [f"{path}.{k}: only in one" for k in sorted(set(actual) ^ set(expected))]
        for key in sorted(set(actual) & set(expected)):
            if not exact and key in DIGEST_KEYS:
                continue
            out += _differences(actual[key], expected[key], f"{path}.{key}", exact)
        return out
    if isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected):
        return [d for i, (a, e) in enumerate(zip(actual, expected, strict=True))
                for d in _differences(a, e, f"{path}[{i}]", exact)]
    if (not exact and isinstance(actual, float) and isinstance(expected, float)
            and math.isclose(actual, expected, rel_tol=OTHER_MACHINE_REL,
                             abs_tol=OTHER_MACHINE_ABS)):
        return []
    return [] if actual == expected else [f"{path}: {actual!r} != {expected!r}"[:300]]


def test_another_numerical_machine_is_compared_to_a_tolerance_and_without_digests():
    golden = {"answer": 1.0, "seen_by_agent": "aa", "details": {"sha256": "bb", "n": 3}}
    nudged = {"answer": 1.0 + 1e-12, "seen_by_agent": "cc",
              "details": {"sha256": "dd", "n": 3}}
    assert _differences(nudged, golden) != []
    assert _differences(nudged, golden, exact=False) == []
    moved = {**nudged, "answer": 1.001}
    assert _differences(moved, golden, exact=False) == ["record.answer: 1.001 != 1.0"]
    assert _differences({**nudged, "details": {"sha256": "dd", "n": 4}}, golden,
                        exact=False) == ["record.details.n: 4 != 3"]


def test_the_sample_covers_every_suite_and_mad_only_under_the_paper_protocol():
    assert len(GOLDEN) == len(golden_tool.SAMPLE)
    assert {s[1] for s in golden_tool.SAMPLE} == {"gravity", "stargazer", "tpbench",
                                                  "packages", "mad"}
    assert all(s[4].get("protocol") == "paper" for s in golden_tool.SAMPLE if s[1] == "mad")
    for (agent, suite, task_id, seed, _), record in zip(golden_tool.SAMPLE, GOLDEN, strict=True):
        assert (record["agent"], record["suite"], record["task_id"], record["seed"]) == (
            agent, suite, task_id, seed)
    # Not a sample of failures: the honest baselines pass somewhere in every suite but
    # packages (whose baseline is below the frozen state of the art by design).
    passing = {r["suite"] for r in GOLDEN if r["passed"]}
    assert passing >= {"gravity", "stargazer", "tpbench", "mad"}


def test_only_run_dependent_fields_are_left_out():
    record = {"value": 1.5, "usage": {"wall_s": 3.2, "observations": 7}, "version": "1.0",
              "details": {"agent_traceback": "...", "elapsed_s": 0.4, "law": "normal",
                          "verification": {"isolation": "unshare", "verdict": "wrong"}}}
    assert golden_tool._strip(record) == {"value": 1.5, "usage": {"observations": 7},
                                          "details": {"law": "normal",
                                                      "verification": {"verdict": "wrong"}}}


def test_the_digest_of_what_the_agent_saw_sees_the_last_bit_and_no_run_dependent_entry():
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"t": [0.0, 1.0], "x": [0.5, 0.25]})
    base = golden_tool._digest(["prompt", {"data": frame, "OUTPUT_DIR": "/tmp/a"}])
    nudged = frame.copy()
    nudged.loc[1, "x"] = np.nextafter(0.25, 1.0)
    assert golden_tool._digest(["prompt", {"data": nudged, "OUTPUT_DIR": "/tmp/a"}]) != base
    assert golden_tool._digest(["prompt", {"data": frame, "OUTPUT_DIR": "/tmp/b"}]) == base
    assert golden_tool._digest(["prompt.", {"data": frame, "OUTPUT_DIR": "/tmp/a"}]) != base


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> list[dict]:
    """The sample played afresh by the tool, in its own process (one BLAS thread, an
    empty cache: see the tool)."""
    out = tmp_path_factory.mktemp("golden") / "records.json"
    src = str(TOOL.parent.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, str(TOOL), "--replay", str(out)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    REPLAY_MACHINE.update(json.loads(out.with_suffix(".machine.json").read_text()))
    return json.loads(out.read_text())


#: The numerical machine of the replay (filled by the fixture).
REPLAY_MACHINE: dict = {}


@pytest.mark.parametrize("index", range(len(golden_tool.SAMPLE)),
                         ids=[f"{s[1]}-{s[0]}-{s[2]}-{s[3]}" for s in golden_tool.SAMPLE])
def test_record_is_unchanged(replayed, index):
    record = replayed[index]
    if "unavailable" in record:
        pytest.skip(f"suite {golden_tool.SAMPLE[index][1]} unavailable here: "
                    f"{record['unavailable']}")
    assert not str(record["error"]).startswith("agent crashed"), record["error"]
    same_machine = REPLAY_MACHINE == GOLDEN_MACHINE
    assert _differences(record, GOLDEN[index], exact=same_machine) == [], (
        "" if same_machine else f"another numerical machine: {REPLAY_MACHINE} (golden file: "
        f"{GOLDEN_MACHINE}), compared to rel {OTHER_MACHINE_REL}, abs {OTHER_MACHINE_ABS}")
