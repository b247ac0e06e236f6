"""The Harbor verifier keeps its secrets from the answer code it runs (issue #38, item 3).

Before: at `rlimits-uid` (the verifier's documented minimum, the usual level in a Docker
verifier) a tpbench answer's module read tests/spec.json, raised with its text, and the
export's key came back in the verifier's record.json; one key covered the whole export;
a reward.json planted in the verifier folder before it ran stayed there when it stopped
early."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.core.keys import Key, new_key
from discoverygym.doors.harbor import verify as harbor_verify
from discoverygym.doors.harbor.keyed import spec_conf, task_key
from discoverygym.sandbox import LEVELS, meets
from discoverygym.sandbox.isolation import LEVEL_ENV, _level_works
from discoverygym.suites.tpbench.execute import MINIMUM_ISOLATION

WORKING = [lvl for lvl in LEVELS if _level_works(lvl, sys.executable)]
SCORED = [lvl for lvl in WORKING if meets(lvl, MINIMUM_ISOLATION)]
TPBENCH = EpisodeSpec("tpbench", "bead-hoop-equilibrium", 0, {})

# The answer's module, run when the verifier loads it: read the spec and raise with it.
STEAL_SPEC = '''
import glob
for path in [SPEC_PATH, *glob.glob("/tests/*")]:
    try:
        raise RuntimeError("STOLEN " + open(path).read())
    except OSError:
        pass
'''


@pytest.fixture
def task_dirs():
    """An open folder (any uid may enter) holding tests/spec.json as the export writes it
    (0644), an /app stand-in and the verifier's folder."""
    top = Path(tempfile.mkdtemp(prefix="dg-harbor-secrets-"))
    os.chmod(top, 0o755)
    (top / "tests").mkdir(mode=0o755)
    (top / "root" / "app").mkdir(parents=True)
    (top / "logs").mkdir()
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _write_task(top: Path, key: Key) -> Path:
    spec = TPBENCH.with_key(key)
    spec_path = top / "tests" / "spec.json"
    conf = {"spec": spec_conf(spec), "answer": "/app/answer.json", "outputs": [],
            "logs": str(top / "logs")}
    spec_path.write_text(json.dumps(conf, indent=1) + "\n")
    os.chmod(spec_path, 0o644)
    answer = get_suite("tpbench").audit_code_answer(
        spec, STEAL_SPEC.replace("SPEC_PATH", repr(str(spec_path))))
    (top / "root" / "app" / "answer.json").write_text(json.dumps(answer))
    return spec_path


@pytest.mark.parametrize("level", SCORED)
def test_an_answer_that_raises_with_the_spec_leaks_no_key(task_dirs, level, monkeypatch):
    monkeypatch.setenv(LEVEL_ENV, level)
    key = new_key()
    spec_path = _write_task(task_dirs, key)
    record = harbor_verify.verify_task(spec_path, root=task_dirs / "root")
    written = (task_dirs / "logs" / "record.json").read_text()
    assert key.hex() not in written.lower() and key.hex() not in json.dumps(record.to_dict())
    assert not spec_path.exists()  # read into memory and removed before the answer ran
    assert record.passed is False
    assert len(record.error or "") <= harbor_verify.MAX_ERROR_CHARS + 100


@pytest.mark.skipif(not SCORED, reason="no level here may score tpbench")
def test_with_both_defences_off_the_key_comes_back(task_dirs, monkeypatch):
    """The control: when the spec stays on disk and the record is not scrubbed, the same
    answer puts the key into record.json, so the test above sees the hole."""
    monkeypatch.setenv(LEVEL_ENV, SCORED[-1])
    monkeypatch.setattr(harbor_verify, "take_spec", lambda p: json.loads(p.read_text()))
    monkeypatch.setattr(harbor_verify, "scrub", lambda record, secret: record)
    key = new_key()
    spec_path = _write_task(task_dirs, key)
    harbor_verify.verify_task(spec_path, root=task_dirs / "root")
    assert key.hex() in (task_dirs / "logs" / "record.json").read_text()


def test_scrub_bounds_the_error_and_removes_the_key_in_either_case():
    key = new_key()
    episode = TPBENCH.build()
    episode.end()
    record = episode.record(agent="harbor", error="boom " + key.hex().upper() + "x" * 100_000)
    record.details["verification"] = {"stderr": [key.hex() * 3]}
    clean = harbor_verify.scrub(record, key.hex())
    text = json.dumps(clean.to_dict())
    assert key.hex() not in text.lower() and "[redacted]" in text
    assert len(clean.error) <= harbor_verify.MAX_ERROR_CHARS + 100


def test_a_planted_reward_is_removed_before_scoring(task_dirs, monkeypatch):
    """A reward.json (and record.json) in the verifier folder before it runs is gone
    before scoring starts: a verifier that stops early leaves no reward at all."""
    logs = task_dirs / "logs"
    for name in ("reward.json", "record.json"):
        (logs / name).write_text('{"reward": 1.0, "PLANTED": true}')
    seen = {}

    def stop_early(conf, *, root):
        seen["left"] = sorted(p.name for p in logs.iterdir())
        raise RuntimeError("the verifier stopped early")

    monkeypatch.setattr(harbor_verify, "verify", stop_early)
    spec_path = _write_task(task_dirs, new_key())
    with pytest.raises(RuntimeError):
        harbor_verify.verify_task(spec_path, root=task_dirs / "root")
    assert seen["left"] == [] and not (logs / "reward.json").exists()


def test_a_task_key_rebuilds_its_own_task_only():
    """Each task's verifier holds a subkey of the export key for that task alone: from
    it, another task of the export cannot be rebuilt (its subkey, its draws differ), and
    the export key does not follow from it."""
    from discoverygym.doors.harbor import export_tasks

    export_key = new_key()
    one = EpisodeSpec("gravity", "period", 0, {"world": "A", "protocol": "full-obs",
                                                 "setup": "leak-free"})
    two = EpisodeSpec("gravity", "period", 1, dict(one.options))
    with tempfile.TemporaryDirectory() as tmp:
        tasks = export_tasks("gravity", Path(tmp), specs=[one, two], key=export_key,
                             oracle="constant")
        held = {t.spec.seed: json.loads((t.path / "tests" / "spec.json").read_text())
                for t in tasks}
    keys = {seed: conf["spec"]["key"] for seed, conf in held.items()}
    assert keys[0] != keys[1] and export_key.hex() not in keys.values()
    assert keys[0] == task_key(export_key, one).hex()
    # what task 0 holds draws task 1 with other numbers than its own key does
    from discoverygym.core.keys import parse_key

    stolen, real = parse_key(keys[0]), parse_key(keys[1])
    assert stolen.derive(*two.to_dict().values()) != real.derive(*two.to_dict().values())
    assert stolen.id != real.id  # and its records would name another key
