"""The audit's attack on the Harbor door's verifier (see core.audit_registry), declared
here, beside the verifier it attacks, and listed in audit.PLATFORM_ATTACK_MODULES:

- `harbor-levels`: at every isolation level this host has (forced as
  $DISCOVERYGYM_SANDBOX_ISOLATION forces it), an answer that detaches a process to
  rewrite reward.json after the verifier scored it. Held: the reward is the verifier's,
  and it names the level it ran at (`isolation_strength`).

- `harbor-secrets` (issue #38): at every level that may score code, an answer whose
  module reads the verifier's tests/spec.json (the task's key) and raises with its
  text; a reward.json and record.json planted in the verifier folder before a verifier
  that stops early (a spec it cannot build); a task's key tried on another task of the
  same export. Held: no key in record.json and the spec gone before the answer ran; no
  reward left behind; each task's key is its own (before: the export's key came back in
  record.json, a planted reward stayed, and one key covered the whole export).

The attacks need an answer whose scoring runs code; the suite supplies one through
`Suite.audit_code_answer` (tpbench's written solutions), so this door names no suite.
Suites whose answers never run as code are not attacked here."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from ... import __version__
from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

# Run when the answer is loaded: leave a process behind that rewrites the reward after
# scoring.
DETACH_AND_FORGE = '''
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(1.0)
        for name in ("reward.json", "record.json"):
            try:
                with open(os.path.join(LOGS, name), "w") as fh:
                    fh.write('{"reward": 1.0, "FORGED": true}')
            except OSError:
                pass
    os._exit(0)
'''
FORGER_WAIT_S = 2.0


def _reward_forger(target: AuditTarget, level: str) -> tuple[bool, str]:
    from ...sandbox import strength
    from .verify import score

    spec = target.episode_spec()
    tmp = Path(tempfile.mkdtemp(prefix="dg-audit-harbor-"))
    try:
        os.chmod(tmp, 0o755)  # a sandbox uid must reach it, as the answer's folder
        root, logs = tmp / "root", tmp / "logs"
        (root / "app").mkdir(parents=True)
        logs.mkdir()
        os.chmod(logs, 0o777)  # how Harbor may hand it over
        answer = target.suite.audit_code_answer(
            spec, DETACH_AND_FORGE.replace("LOGS", repr(str(logs))))
        (root / "app" / "answer.json").write_text(json.dumps(answer))
        conf = {"spec": spec.to_dict(), "answer": "/app/answer.json", "outputs": [],
                "logs": str(logs)}
        score(conf, root=root)
        time.sleep(FORGER_WAIT_S)  # past the forger's wake-up
        text = (logs / "reward.json").read_text()
        reward = json.loads(text)
        ok = ("FORGED" not in text and reward.get("reward") == 0.0
              and reward.get("isolation_strength") == strength(level))
        return ok, f"reward.json {text.strip()[:100]}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def reward_forger_attacks(target: AuditTarget) -> list[Outcome]:
    """The reward forger at every isolation level of this host."""
    from ...sandbox.attacks import forced_level, working_levels

    outcomes = []
    for level in working_levels():
        def forge(level=level) -> tuple[bool, str]:
            with forced_level(level):
                return _reward_forger(target, level)
        outcomes.append(guard("harbor-levels", f"a detached process rewrites Harbor's "
                              f"reward at {level}", "the verifier's reward, with its level",
                              forge))
    return outcomes


STEAL_SPEC = '''
for path in [SPEC_PATH, "/tests/spec.json"]:
    try:
        raise RuntimeError("STOLEN " + open(path).read())
    except OSError:
        pass
'''


def _spec_thief(target: AuditTarget, level: str) -> tuple[bool, str]:
    from ...core.keys import new_key
    from .keyed import spec_conf
    from .verify import verify_task

    spec = target.episode_spec().with_key(new_key())
    tmp = Path(tempfile.mkdtemp(prefix="dg-audit-harbor-spec-"))
    try:
        os.chmod(tmp, 0o755)  # any uid may enter, as a verifier's /tests
        (tmp / "tests").mkdir(mode=0o755)
        (tmp / "root" / "app").mkdir(parents=True)
        spec_path = tmp / "tests" / "spec.json"
        conf = {"spec": spec_conf(spec), "answer": "/app/answer.json", "outputs": [],
                "logs": str(tmp / "logs"), "discoverygym_version": __version__}
        spec_path.write_text(json.dumps(conf))
        os.chmod(spec_path, 0o644)  # as the export writes it
        answer = target.suite.audit_code_answer(
            spec, STEAL_SPEC.replace("SPEC_PATH", repr(str(spec_path))))
        (tmp / "root" / "app" / "answer.json").write_text(json.dumps(answer))
        verify_task(spec_path, root=tmp / "root")
        written = (tmp / "logs" / "record.json").read_text()
        leaked = spec.key.hex() in written.lower()
        return (not leaked and not spec_path.exists(),
                f"record.json {'holds' if leaked else 'holds no'} key; the spec "
                f"{'stayed' if spec_path.exists() else 'was removed'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _planted_reward(target: AuditTarget) -> tuple[bool, str]:
    from .verify import verify_task

    tmp = Path(tempfile.mkdtemp(prefix="dg-audit-harbor-plant-"))
    try:
        logs = tmp / "logs"
        logs.mkdir()
        for name in ("reward.json", "record.json"):
            (logs / name).write_text('{"reward": 1.0, "PLANTED": true}')
        spec = target.episode_spec().to_dict() | {"task_id": "no-such-task-(stops-early)"}
        spec_path = tmp / "spec.json"
        spec_path.write_text(json.dumps({"spec": spec, "outputs": [], "logs": str(logs),
                                         "discoverygym_version": __version__}))
        try:
            verify_task(spec_path, root=tmp)
            stopped = "scored"
        except Exception as exc:  # noqa: BLE001 - the early stop is the point
            stopped = f"stopped early ({type(exc).__name__})"
        left = sorted(p.name for p in logs.iterdir() if "PLANTED" in p.read_text())
        return not left, f"the verifier {stopped}; planted files left: {left}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _task_key_reuse(target: AuditTarget) -> tuple[bool, str]:
    from ...core.keys import new_key
    from .keyed import task_key

    export_key = new_key()
    one = target.episode_spec()
    two = type(one)(one.suite, one.task_id, one.seed + 1, dict(one.options))
    held, other = task_key(export_key, one), task_key(export_key, two)
    same = {held.hex(), other.hex()} & {export_key.hex()} or held == other
    return (not same, "the task's key is the export key or another task's" if same
            else "each task holds a subkey of its own")


def harbor_secret_attacks(target: AuditTarget) -> list[Outcome]:
    """The spec thief at every level that may score code; the planted reward; the
    task key reused."""
    from ...sandbox import meets
    from ...sandbox.attacks import VERIFIER_MINIMUM, forced_level, working_levels

    outcomes = []
    for level in [lvl for lvl in working_levels() if meets(lvl, VERIFIER_MINIMUM)]:
        def steal(level=level) -> tuple[bool, str]:
            with forced_level(level):
                return _spec_thief(target, level)
        outcomes.append(guard("harbor-secrets", f"an answer raises with the verifier's "
                              f"spec (its key) at {level}", "no key in record.json; the "
                              "spec removed before the answer ran", steal))
    outcomes.append(guard("harbor-secrets", "a reward and record planted before a verifier "
                          "that stops early", "no planted file left",
                          lambda: _planted_reward(target)))
    outcomes.append(guard("harbor-secrets", "one task's key used for another task of the "
                          "export", "each task's key is its own subkey",
                          lambda: _task_key_reuse(target)))
    return outcomes


def _answers_run_as_code(target: AuditTarget) -> bool:
    return target.suite.audit_code_answer(target.episode_spec(), "") is not None


ATTACKS = (
    AttackFamily("harbor-levels", "a detached process rewriting Harbor's reward, at every "
                 "isolation level (suites whose answers run as code)",
                 reward_forger_attacks, applies=_answers_run_as_code,
                 needs_interpreter=True),
    AttackFamily("harbor-secrets", "the verifier's key and spec stolen by answer code, a "
                 "planted reward, a task key reused (suites whose answers run as code)",
                 harbor_secret_attacks, applies=_answers_run_as_code,
                 needs_interpreter=True),
)
