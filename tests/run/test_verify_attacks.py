"""The audit's forged-runs family (run/verify_attacks.py): registered beside verify,
clean on the shipped verify, and a finding when a defence of verify is switched off
(the attacks are real)."""

from __future__ import annotations

from discoverygym.audit import PLATFORM_ATTACK_MODULES
from discoverygym.core import get_suite
from discoverygym.core.audit_registry import AuditTarget
from discoverygym.run import verify
from discoverygym.run.verify_attacks import FORGERIES, forged_runs


def _outcomes() -> dict[str, bool]:
    return {o.attack: o.ok for o in forged_runs(AuditTarget(get_suite("gravity")))}


def test_the_family_is_registered_and_every_forgery_is_rejected():
    assert "discoverygym.run.verify_attacks" in PLATFORM_ATTACK_MODULES
    outcomes = _outcomes()
    assert len(outcomes) == 1 + len(FORGERIES)
    assert all(outcomes.values()), outcomes


def test_verify_that_trusts_unreplayable_claims_is_a_finding(monkeypatch):
    monkeypatch.setattr(verify, "claims_more_than_failure", lambda record: False)
    outcomes = _outcomes()
    assert not outcomes["a pass claimed on a record never played (infrastructure failure)"]
    assert outcomes["the honest keyed run"]


def test_verify_that_ignores_a_record_s_labels_is_a_finding(monkeypatch):
    monkeypatch.setattr(verify, "_label_problems", lambda record, expected: [])
    outcomes = _outcomes()
    assert not outcomes["records relabelled under another protocol and world"]
    assert outcomes["the honest keyed run"] and outcomes["a record duplicated"]


def test_a_verify_that_confirms_whatever_it_replays_is_a_finding(monkeypatch):
    """The run's verdict switched off: every forgery that reaches the records passes
    (the two run.json edits are still refused before any record is read)."""
    monkeypatch.setattr(verify.RunReport, "verified", property(lambda self: True))
    found = {name for name, ok in _outcomes().items() if not ok}
    assert found == {name for name, _ in FORGERIES} - {
        "run.json's plan made public, digest recomputed",
        "run.json's plan given one more episode, digest kept"}
