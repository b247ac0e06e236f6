"""SIGTERM (a scheduler's limit, `kill PID`) stops a scripted run the way Ctrl-C does
(issue 36). Before: no summary.json, and the resource tracker printed "There appear to
be 5 leaked semaphore objects"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from testpaths import REPO


def test_sigterm_writes_the_summary_exits_143_and_leaks_nothing(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "DISCOVERYGYM_PLUGINS": "toy_suite", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen(
        [sys.executable, "-m", "discoverygym", "run", "toy", "--agent", "slow-bisect",
         "--seeds", "0-999", "--workers", "2", "--quiet", "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = out / "records.jsonl"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and run.poll() is None and not (
                records.is_file() and records.read_text().count("\n") >= 2):
            time.sleep(0.2)
        assert run.poll() is None, run.communicate()
        run.send_signal(signal.SIGTERM)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 143, (stdout, stderr)
    assert "terminated" in stdout and "--resume" in stdout
    assert "leaked" not in stderr and "Traceback" not in stderr + stdout, stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    kept = [line for line in Path(records).read_text().splitlines() if line.strip()]
    assert summary["n_episodes"] == len(kept) >= 2


def test_sigterm_stops_a_calibration_as_ctrl_c_does(tmp_path):
    runs = tmp_path / "runs"
    env = {**os.environ, "DISCOVERYGYM_PLUGINS": "toy_suite", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    run = subprocess.Popen(
        [sys.executable, "-m", "discoverygym", "calibrate", "toy", "--seeds", "0-4999",
         "--workers", "2", "--quiet", "--runs", str(runs)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and run.poll() is None and not any(
                p.read_text().count("\n") >= 2 for p in runs.glob("*/records.jsonl")):
            time.sleep(0.2)
        assert run.poll() is None, run.communicate()
        run.send_signal(signal.SIGTERM)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 143, (stdout, stderr)
    assert "interrupted" in stdout and "leaked" not in stderr, stderr
    assert any(json.loads(p.read_text())["interrupted"] for p in runs.glob("*/summary.json"))
