"""The audit's attack on `discoverygym verify` (run/verify.py): forged runs of issue #38.

Declared here, beside verify. The family makes a small keyed run of the audited suite
(one episode of its audit case, nothing submitted: a failure, so any pass in it is
forged), checks that the honest run verifies, then hands verify each forgery a participant could make
from the files of the run: a failure flipped to a pass, the pass claimed on a record
that says it was never played, records recomputed publicly without their key id, a
record deleted, one duplicated, twenty invented passes, a metric value changed, records
relabelled (shown under another protocol and world on the leaderboard), and a
run.json whose plan was made public (digest recomputed) or edited (digest kept).
Expected: verify confirms the honest run and rejects each forgery with a reason. Where
the score reads files the agent left (the packages suite), a changed pass, score or
metric value cannot be seen from the record: verify confirms the truth only and says
"score not replayable", and the outcome is held because said, not because rejected."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.audit_registry import AttackFamily, AuditTarget, Outcome, guard
from ..core.keys import Key, new_key
from .plan import make_plan, plan_digest
from .verify import ACCEPTED, TRUTH_ONLY, RunRefused, verify_run

FAMILY = "forged-runs"
Forgery = Callable[[list[dict[str, Any]], dict[str, Any]], None]


def _flip(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records[0].update(passed=True, score=1.0)


def _never_played(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records[0].update(passed=True, score=1.0)
    records[0]["details"] = {"infrastructure_failure": "lost"}


def _keyless(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    for record in records:
        record.pop("key_id", None)


def _deleted(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records.pop()  # the run's one failure: deleting failures raises a pass rate


def _duplicated(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records.append(dict(records[0]))


def _invented(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records += [{**records[0], "task_id": f"invented-{i}", "passed": True, "score": 1.0}
                for i in range(20)]


def _metric_value(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records[0]["value"] = 1e-9


def _relabelled(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    for record in records:  # the leaderboard groups by these labels
        record.update(protocol="relabelled-protocol", world="relabelled-world")


def _plan_made_public(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    info["plan"]["key_id"] = info["plan"]["key_commitment"] = None
    info["plan_digest"] = plan_digest(info["plan"])
    _keyless(records, info)


def _plan_edited(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    info["plan"]["episodes"] = info["plan"]["episodes"] + [["invented-0", 0, {}]]


FORGERIES: tuple[tuple[str, Forgery], ...] = (
    ("a failure flipped to a pass", _flip),
    ("a pass claimed on a record never played (infrastructure failure)", _never_played),
    ("records without their key id", _keyless),
    ("a record deleted", _deleted),
    ("a record duplicated", _duplicated),
    ("20 invented passing records", _invented),
    ("a metric value set to 1e-9", _metric_value),
    ("records relabelled under another protocol and world", _relabelled),
    ("run.json's plan made public, digest recomputed", _plan_made_public),
    ("run.json's plan given one more episode, digest kept", _plan_edited),
)


def _honest_run(target: AuditTarget, key: Key) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One keyed episode of the audit case, nothing submitted (a failure); one episode
    keeps the family cheap, since each verify rebuilds what it replays."""
    spec = target.episode_spec().with_key(key)
    plan = make_plan([spec])
    return [spec.build().record(agent="audit").to_dict()], {"plan": plan,
                                                            "plan_digest": plan_digest(plan)}


def _verdict(run: Path, records: list[dict[str, Any]], info: dict[str, Any],
             key: Key) -> tuple[bool, str, bool]:
    """(verified, why, said) for the run written from `records` and `info`; `said`: the
    run was verified only because its score cannot be replayed by nature, which the
    summary says ("truth confirmed, score not replayable")."""
    run.mkdir(parents=True)
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "run.json").write_text(json.dumps(info))
    try:
        report = verify_run(run, key, commitment=key.commitment, key_given=True)
    except RunRefused as exc:
        return False, f"refused: {exc}", False
    problems = [f"{v.status}: {v.detail}" for v in report.verdicts if v.status not in ACCEPTED]
    said = report.verified and any(v.status == TRUTH_ONLY for v in report.verdicts)
    return report.verified, (problems[0] if problems else report.summary_line())[:200], said


def forged_runs(target: AuditTarget) -> list[Outcome]:
    key = new_key()
    with tempfile.TemporaryDirectory(prefix="dg-audit-forged-") as tmp:
        root = Path(tmp)
        records, info = _honest_run(target, key)

        def honest() -> tuple[bool, str]:
            verified, why, _ = _verdict(root / "honest", json.loads(json.dumps(records)),
                                        json.loads(json.dumps(info)), key)
            return verified, f"verified: {why}" if verified else f"rejected: {why}"

        outcomes = [guard(FAMILY, "the honest keyed run", "verify confirms it", honest)]
        for i, (attack, forge) in enumerate(FORGERIES):
            def forged(forge: Forgery = forge, i: int = i) -> tuple[bool, str]:
                copy, copy_info = json.loads(json.dumps(records)), json.loads(json.dumps(info))
                forge(copy, copy_info)
                verified, why, said = _verdict(root / f"forged-{i}", copy, copy_info, key)
                if said:  # held because said, as the rebuild family's "public by nature"
                    return True, f"not replayable by nature (said): {why}"
                return not verified, f"rejected: {why}" if not verified else "verified"

            outcomes.append(guard(FAMILY, attack, "verify rejects it with a reason (or says "
                                  "the score is not replayable)", forged))
    return outcomes


ATTACKS = (
    AttackFamily(FAMILY, "forge a keyed run's records and run.json (flipped, unplayed, "
                 "keyless, deleted, duplicated, invented, edited), then verify it", forged_runs),
)
