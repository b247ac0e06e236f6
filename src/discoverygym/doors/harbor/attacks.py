"""The audit's attack on the Harbor door's verifier (see core.audit_registry), declared
here, beside the verifier it attacks, and listed in audit.PLATFORM_ATTACK_MODULES:

- `harbor-levels`: at every isolation level this host has (forced as
  $DISCOVERYGYM_SANDBOX_ISOLATION forces it), an answer that detaches a process to
  rewrite reward.json after the verifier scored it. Held: the reward is the verifier's,
  and it names the level it ran at (`isolation_strength`).

The attack needs an answer whose scoring runs code; the suite supplies one through
`Suite.audit_code_answer` (tpbench's written solutions), so this door names no suite.
Suites whose answers never run as code are not attacked here."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

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


def _answers_run_as_code(target: AuditTarget) -> bool:
    return target.suite.audit_code_answer(target.episode_spec(), "") is not None


ATTACKS = (
    AttackFamily("harbor-levels", "a detached process rewriting Harbor's reward, at every "
                 "isolation level (suites whose answers run as code)",
                 reward_forger_attacks, applies=_answers_run_as_code,
                 needs_interpreter=True),
)
