"""The audit's families of issue #28 item 7, each declared beside what it attacks: every
family is reported as held on the current code, and as a finding once its defence is
switched off (the attack is real)."""

from __future__ import annotations

import importlib

import pytest

from discoverygym.audit import PLATFORM_ATTACK_MODULES, families
from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.core.audit_registry import AuditTarget
from discoverygym.core.keyed_attacks import rebuild_attack, seen_digest
from discoverygym.core.suite import Suite


def _target(suite: str) -> AuditTarget:
    return AuditTarget(get_suite(suite), interpreter=False)


# ---- rebuilding one's episode with the package ----------------------------------------------
def test_the_rebuild_family_is_a_platform_family_beside_the_keyed_draws():
    assert "discoverygym.core.keyed_attacks" in PLATFORM_ATTACK_MODULES
    module = importlib.import_module("discoverygym.core.keyed_attacks")
    assert [f.name for f in module.ATTACKS] == ["rebuild"]
    assert "rebuild" in {f.name for f in families(_target("gravity"))}


@pytest.mark.parametrize("suite", ["gravity", "stargazer"])
def test_the_rebuild_is_held_by_the_key_and_a_finding_without_it(suite):
    """The audit's fresh key holds the episode out; played against the public draw (the
    key switched off) the same attacker finds its episode and passes."""
    (held,) = rebuild_attack(_target(suite))
    assert held.ok, held
    assert "none of 2 public rebuilds matches" in held.observed
    assert "passed=False" in held.observed

    (found,) = rebuild_attack(_target(suite), key_for=lambda spec: None)
    assert not found.ok, found
    assert "rebuild at public seed 0 matches" in found.observed
    assert "passed=True" in found.observed


def test_the_rebuild_is_a_finding_when_keyed_episode_ignores_the_key(monkeypatch):
    """The defence itself removed: the platform's `Suite.keyed_episode` (mad keeps it)
    drawing from the public seed."""
    def unkeyed(self, spec, key):
        return self.episode(spec.task_id, seed=spec.seed, **spec.options)

    monkeypatch.setattr(Suite, "keyed_episode", unkeyed)
    (outcome,) = rebuild_attack(_target("mad"))
    assert not outcome.ok and "matches" in outcome.observed, outcome


@pytest.mark.parametrize("suite", ["tpbench", "packages"])
def test_what_is_public_by_nature_is_held_because_said(suite):
    target = _target(suite)
    reason = target.suite.public_by_nature(target.episode_spec())
    assert reason
    (outcome,) = rebuild_attack(target)
    assert outcome.ok and f"public by nature ({reason})" in outcome.observed


def test_the_digest_tells_apart_what_differs_by_one_bit_and_ignores_run_folders():
    import numpy as np

    a = {"x": np.array([1.0, 2.0]), "DATA_DIR": "/tmp/a"}
    b = {"x": np.array([1.0, np.nextafter(2.0, 3.0)]), "DATA_DIR": "/tmp/a"}
    assert seen_digest("p", a) != seen_digest("p", b)
    assert seen_digest("p", a) == seen_digest("p", {**a, "DATA_DIR": "/elsewhere"})
    assert seen_digest("p", a) != seen_digest("q", a)
    # the keyed episode differs from its public draw in what the agent sees
    spec = EpisodeSpec("stargazer", "easy-000", 0, {"mode": "v2"})
    public = spec.build()
    from discoverygym.core.keys import new_key

    keyed = spec.with_key(new_key()).build()
    assert seen_digest(public.prompt, public.workspace()) != seen_digest(
        keyed.prompt, keyed.workspace())
