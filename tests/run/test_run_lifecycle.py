"""Runs die cleanly: workers die with their driver, a write error is one line and a
non-zero exit with the records kept, Ctrl-C writes a summary marked interrupted, and
an episode the infrastructure lost still leaves a failed record that --resume replays."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym.cli import app
from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from discoverygym.run import records as records_mod
from discoverygym.run import runner as runner_mod

toy_suite.install()


def _children(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for tid in os.listdir(f"/proc/{parent}/task") if os.path.exists(f"/proc/{parent}") else []:
            try:
                kids = Path(f"/proc/{parent}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                if kid not in found:
                    found.add(kid)
                    todo.append(kid)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


DRIVER = textwrap.dedent("""
    import time
    from discoverygym.run.executors import run_process
    for _ in run_process([(time.sleep, (60,))] * 2, workers=2):
        pass
""")


def test_pool_workers_die_with_a_killed_driver():
    """Before: after kill -9 of the driver, pool workers and the resource tracker were
    alive 31 s later."""
    driver = subprocess.Popen([sys.executable, "-c", DRIVER])
    try:
        deadline = time.monotonic() + 60
        while len(_children(driver.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)  # two workers and the resource tracker
        spawned = _children(driver.pid)
        assert len(spawned) >= 2, spawned
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in spawned) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in spawned if _alive(p)]


def _cli(args: list[str]):
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_an_unwritable_out_is_one_line_and_a_nonzero_exit(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = _cli(["run", "toy", "--agent", "bisect", "--executor", "serial", "--quiet",
                   "--out", str(blocker / "run")])
    assert result.exit_code == 1
    assert "cannot write the run to" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) <= 3


def test_a_full_disk_mid_run_keeps_the_records_written(tmp_path, monkeypatch):
    written = {"n": 0}
    real_write = records_mod.RecordWriter.write

    def write(self, record):
        if written["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written["n"] += 1
        real_write(self, record)

    monkeypatch.setattr(records_mod.RecordWriter, "write", write)
    out = tmp_path / "run"
    result = _cli(["run", "toy", "--agent", "bisect", "--executor", "serial", "--quiet",
                   "--out", str(out)])
    words = " ".join(result.output.split())  # the terminal wraps a long tmp path
    assert result.exit_code == 1 and "No space left on device" in words
    assert "Traceback" not in result.output
    assert len(read_records(out / "records.jsonl")) == 2


def test_ctrl_c_writes_a_summary_marked_interrupted(tmp_path, monkeypatch):
    played = {"n": 0}
    real = runner_mod.play_scripted

    def play(spec, agent):
        if played["n"] == 2:
            raise KeyboardInterrupt
        played["n"] += 1
        return real(spec, agent)

    monkeypatch.setattr(runner_mod, "play_scripted", play)
    out = tmp_path / "run"
    result = _cli(["run", "toy", "--agent", "bisect", "--executor", "serial", "--quiet",
                   "--out", str(out)])
    assert result.exit_code == 130 and "interrupted" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["n_episodes"] == 2


def test_an_episode_lost_to_the_infrastructure_leaves_a_record_and_is_replayed(tmp_path):
    """Before: a job that raised (a worker crash, a host-side decoding error) was only
    logged; no record was written, so the episode vanished from the results."""
    specs = get_suite("toy").episodes(range(3))

    def flaky(spec, agent):
        if spec["seed"] == 1:
            raise RecursionError("maximum recursion depth exceeded")
        return runner_mod.play_scripted(spec, agent)

    first = run_episodes(specs, out_dir=tmp_path, job=flaky, job_args=("bisect",),
                         executor="serial", show_progress=False)
    records = read_records(tmp_path / "records.jsonl")
    assert len(records) == 3 and len(first.failures) == 1
    lost = [r for r in records if r["seed"] == 1][0]
    assert lost["passed"] is False and "infrastructure failure" in lost["error"]
    assert "RecursionError" in lost["details"]["infrastructure_failure"]
    again = run_episodes(specs, out_dir=tmp_path, agent="bisect", executor="serial",
                         show_progress=False, resume=True)
    assert again.n_new == 1  # only the lost one is played again
    final = {r["seed"]: r for r in again.records}
    assert len(final) == 3 and final[1]["passed"] is True


@pytest.mark.parametrize("field", ["interrupted"])
def test_a_normal_summary_says_it_was_not_interrupted(tmp_path, field):
    run_episodes(get_suite("toy").episodes(range(1)), out_dir=tmp_path, agent="bisect",
                 executor="serial", show_progress=False)
    assert json.loads((tmp_path / "summary.json").read_text())[field] is False
