"""A real `discoverygym run gravity` killed mid-way (SIGKILL, no cleanup) and finished
with `--resume`: every pair ends with exactly one record, the records written before
the crash are kept as they were, and the results equal an uninterrupted run's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from crash import kill_after_records, tear_last_line
from discoverygym.core import episode_key, get_suite
from discoverygym.run import read_records, run_episodes
from testpaths import TESTS

# Every published pair on world A (47): enough episodes that the kill lands mid-run.
WORLDS = "A"
AGENT = "expert-adaptive"
PROTOCOL = "budget-obs-100"


def _env() -> dict[str, str]:
    # Other tests may have registered the toy suite as a plugin (DISCOVERYGYM_PLUGINS);
    # the CLI subprocess must be able to import it.
    tests = str(TESTS)
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")]))}


def _cli(out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "discoverygym.cli", "run", "gravity", "--agent", AGENT,
            "--protocol", PROTOCOL, "--worlds", WORLDS, "--executor", "serial",
            "--workers", "1", "--quiet", "--out", str(out), *extra]


def _key(record: dict) -> str:
    return episode_key(record["suite"], record["task_id"], record["seed"], record["options"])


def _comparable(record: dict) -> dict:
    """A record without the fields that legitimately differ between runs (timings)."""
    record = dict(record)
    record["usage"] = {k: v for k, v in record["usage"].items() if k != "wall_s"}
    return record


def test_killed_gravity_run_resumes_without_duplicates(tmp_path):
    specs = get_suite("gravity").episodes(protocol=PROTOCOL, worlds=WORLDS)
    planned = len(specs)
    assert planned > 40
    out = tmp_path / "run"
    records_path = out / "records.jsonl"

    # The uninterrupted reference (in-process, same executor) also warms the world
    # cache, so the killed run spends its time on episodes rather than on REBOUND.
    reference = run_episodes(specs, out_dir=tmp_path / "reference", agent=AGENT,
                             executor="serial", show_progress=False).records

    proc = subprocess.Popen(_cli(out), start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env())
    kill_after_records(proc, records_path, at_least=3, timeout_s=300)

    before = read_records(records_path)
    assert 3 <= len(before) < planned
    tear_last_line(records_path, '{"suite": "gravity", "task_id": "per')

    # Without --resume the CLI refuses to write into a run that already has records.
    refused = subprocess.run(_cli(out), capture_output=True, text=True, env=_env())
    assert refused.returncode != 0 and "--resume" in refused.stdout + refused.stderr
    assert read_records(records_path) == before

    subprocess.run(_cli(out, "--resume"), check=True, capture_output=True, env=_env())

    # The torn line was cut before the first new record: every line is a whole record.
    parsed = [json.loads(line) for line in records_path.read_text().splitlines()]
    keys = [_key(r) for r in parsed]
    assert len(parsed) == planned and len(set(keys)) == planned
    assert set(keys) == {episode_key(s.suite, s.task_id, s.seed, s.options) for s in specs}
    assert parsed[:len(before)] == before  # what was written before the crash is kept

    by_key = {_key(r): _comparable(r) for r in reference}
    assert all(_comparable(r) == by_key[_key(r)] for r in parsed)

    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_episodes"] == planned
    assert summary["n_passed"] == sum(r["passed"] for r in reference)
    run_info = json.loads((out / "run.json").read_text())
    assert "resumed_from" in run_info
