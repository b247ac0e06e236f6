"""The audit's attack on `discoverygym verify` (run/verify.py): forged runs of issue #38.

Declared here, beside verify. The family makes a small keyed run of the audited suite
(its audit case, nothing submitted: a failure, so any pass in it is forged), checks
that the honest run verifies, then hands verify each forgery a participant could make
from the files of the run: a failure flipped to a pass, the pass claimed on a record
that says it was never played, records recomputed publicly without their key id, a
record deleted, one duplicated, twenty invented passes, a metric value changed, and a
run.json whose plan was made public (digest recomputed) or edited (digest kept).
Expected: verify confirms the honest run and rejects each forgery with a reason."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.audit_registry import AttackFamily, AuditTarget, Outcome, guard
from ..core.keys import Key, new_key
from .plan import make_plan, plan_digest
from .verify import ACCEPTED, RunRefused, verify_run

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
    records.pop()


def _duplicated(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records.append(dict(records[0]))


def _invented(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records += [{**records[0], "task_id": f"invented-{i}", "passed": True, "score": 1.0}
                for i in range(20)]


def _metric_value(records: list[dict[str, Any]], info: dict[str, Any]) -> None:
    records[0]["value"] = 1e-9


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
    ("run.json's plan made public, digest recomputed", _plan_made_public),
    ("run.json's plan given one more episode, digest kept", _plan_edited),
)


def _honest_run(target: AuditTarget, key: Key) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Two keyed episodes of the audit case (seeds s and s+1), nothing submitted."""
    base = target.episode_spec()
    specs = [base.with_key(key)] + [
        type(base)(base.suite, base.task_id, base.seed + 1, dict(base.options), key)]
    records = [spec.build().record(agent="audit").to_dict() for spec in specs]
    plan = make_plan(specs)
    return records, {"plan": plan, "plan_digest": plan_digest(plan)}


def _verdict(run: Path, records: list[dict[str, Any]], info: dict[str, Any],
             key: Key) -> tuple[bool, str]:
    """(verified, why) for the run written from `records` and `info`."""
    run.mkdir(parents=True)
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "run.json").write_text(json.dumps(info))
    try:
        report = verify_run(run, key, commitment=key.commitment, key_given=True)
    except RunRefused as exc:
        return False, f"refused: {exc}"
    problems = [f"{v.status}: {v.detail}" for v in report.verdicts if v.status not in ACCEPTED]
    return report.verified, (problems[0] if problems else report.summary_line())[:200]


def forged_runs(target: AuditTarget) -> list[Outcome]:
    key = new_key()
    with tempfile.TemporaryDirectory(prefix="dg-audit-forged-") as tmp:
        root = Path(tmp)
        records, info = _honest_run(target, key)

        def honest() -> tuple[bool, str]:
            verified, why = _verdict(root / "honest", json.loads(json.dumps(records)),
                                     json.loads(json.dumps(info)), key)
            return verified, f"verified: {why}" if verified else f"rejected: {why}"

        outcomes = [guard(FAMILY, "the honest keyed run", "verify confirms it", honest)]
        for i, (attack, forge) in enumerate(FORGERIES):
            def forged(forge: Forgery = forge, i: int = i) -> tuple[bool, str]:
                copy, copy_info = json.loads(json.dumps(records)), json.loads(json.dumps(info))
                forge(copy, copy_info)
                verified, why = _verdict(root / f"forged-{i}", copy, copy_info, key)
                return not verified, f"rejected: {why}" if not verified else "verified"

            outcomes.append(guard(FAMILY, attack, "verify rejects it with a reason", forged))
    return outcomes


ATTACKS = (
    AttackFamily(FAMILY, "forge a keyed run's records and run.json (flipped, unplayed, "
                 "keyless, deleted, duplicated, invented, edited), then verify it", forged_runs),
)
