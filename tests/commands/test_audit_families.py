"""The audit's families of issue #28 item 7, each declared beside what it attacks: every
family is reported as held on the current code, and as a finding once its defence is
switched off (the attack is real)."""

from __future__ import annotations

import importlib
from pathlib import Path

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
    # (stargazer's public draw does not depend on the seed: both rebuilds look the same)
    assert "matches" in found.observed or "look the same" in found.observed
    assert "passed=True" in found.observed


def test_the_rebuild_is_a_finding_when_keyed_episode_ignores_the_key(monkeypatch):
    """The defence itself removed: the platform's `Suite.keyed_episode` (mad keeps it)
    drawing from the public seed."""
    def unkeyed(self, spec, key):
        return self.episode(spec.task_id, seed=spec.seed, **spec.options)

    monkeypatch.setattr(Suite, "keyed_episode", unkeyed)
    (outcome,) = rebuild_attack(_target("mad"))
    assert not outcome.ok and "matches" in outcome.observed, outcome


def test_a_rebuild_that_only_looks_the_same_is_held_and_a_public_one_is_found(monkeypatch):
    """The toy suite shows nothing seed-dependent: every rebuild looks like the keyed
    episode, but the bisecting oracle's calls, replayed, fail on the keyed draw; on
    the public draw they pass, and that is a finding."""
    import toy_suite

    monkeypatch.setenv("DISCOVERYGYM_PLUGINS", "toy_suite")
    toy_suite.register()
    (held,) = rebuild_attack(_target("toy"))
    assert held.ok and "2 of 2 public rebuilds look the same" in held.observed, held
    assert "passed=False" in held.observed
    (found,) = rebuild_attack(_target("toy"), key_for=lambda spec: None)
    assert not found.ok and "passed=True" in found.observed, found


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


# ---- hostile records for the readers --------------------------------------------------------
def test_the_readers_family_is_declared_beside_the_readers():
    assert "discoverygym.report.attacks" in PLATFORM_ATTACK_MODULES
    assert "readers" in {f.name for f in families(_target("gravity"))}


@pytest.fixture
def fast_fifo(monkeypatch):
    from discoverygym.report import attacks as reader_attacks

    monkeypatch.setattr(reader_attacks, "FIFO_WAIT_S", 3.0)
    return reader_attacks


def test_hostile_records_are_held_by_every_reader(fast_fifo):
    outcomes = fast_fifo.reader_attacks(_target("gravity"))
    assert len(outcomes) == 5 and all(o.ok for o in outcomes), outcomes


@pytest.mark.parametrize(("module", "name", "attack"), [
    ("discoverygym.core.escape", "for_terminal", "leaderboard table"),
    ("discoverygym.core.escape", "for_markdown", "markdown leaderboard"),
    ("discoverygym.report.html", "for_html", "HTML report"),
])
def test_without_escaping_the_readers_family_finds_the_hole(monkeypatch, fast_fifo, module,
                                                           name, attack):
    """Each reader's escaping switched off: the same hostile run is a finding."""
    monkeypatch.setattr(importlib.import_module(module), name,
                        lambda value, *a, **k: "" if value is None else str(value))
    outcomes = {o.attack: o for o in fast_fifo.reader_attacks(_target("gravity"))}
    (broken,) = [o for a, o in outcomes.items() if attack in a]
    assert not broken.ok, broken


def test_a_reader_that_opens_the_fifo_is_a_finding_not_a_hang(monkeypatch, fast_fifo):
    """The regular-file check removed: the leaderboard opens the FIFO and waits; the
    audit releases it after FIFO_WAIT_S and reports it."""
    from discoverygym.run import leaderboard

    monkeypatch.setattr(leaderboard, "record_files",
                        lambda paths: [str(Path(p) / "records.jsonl") for p in paths])
    outcomes = {o.attack: o for o in fast_fifo.reader_attacks(_target("gravity"))}
    fifo = outcomes["records.jsonl is a FIFO (leaderboard)"]
    assert not fifo.ok and "still reading" in fifo.observed, fifo


# ---- the sandbox at each isolation level: inherited descriptors, a detached forger ---------
def test_the_sandbox_family_is_held_at_every_level_of_this_host():
    from discoverygym.sandbox import attacks

    assert "discoverygym.sandbox.attacks" in PLATFORM_ATTACK_MODULES
    levels = attacks.working_levels()
    outcomes = attacks.sandbox_attacks(_target("gravity"))
    assert len(outcomes) == 2 * len(levels) and all(o.ok for o in outcomes), outcomes
    for level in levels:
        assert any(o.attack == f"inherited descriptors at {level}" for o in outcomes)
    import os

    from discoverygym.sandbox.isolation import LEVEL_ENV
    assert os.environ.get(LEVEL_ENV) is None


def test_a_detached_forger_is_a_finding_where_the_minimum_is_not_asked(monkeypatch):
    """The defence removed: scoring allowed at rlimits-only, where a process the answer
    detaches outlives the run and rewrites the reward."""
    from discoverygym.sandbox import attacks

    monkeypatch.setattr(attacks, "working_levels", lambda: ["rlimits-only"])
    monkeypatch.setattr(attacks, "VERIFIER_MINIMUM", "rlimits-only")
    outcomes = {o.attack: o for o in attacks.sandbox_attacks(_target("gravity"))}
    forger = outcomes["a detached process rewrites a reward at rlimits-only"]
    assert not forger.ok and "wrote the reward" in forger.observed, forger


def test_an_inherited_host_file_is_a_finding(monkeypatch, tmp_path):
    """The defence removed: the sandbox started with a host file on a descriptor."""
    import subprocess

    from discoverygym.sandbox import attacks

    host_file = open(tmp_path / "sandbox.log", "w")  # noqa: SIM115 - held for the run
    real_popen = subprocess.Popen

    def leaky_popen(*args, **kwargs):
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), host_file.fileno())
        return real_popen(*args, **kwargs)

    monkeypatch.setattr(attacks, "working_levels", lambda: ["rlimits-only"])
    monkeypatch.setattr(subprocess, "Popen", leaky_popen)
    try:
        outcomes = {o.attack: o for o in attacks.sandbox_attacks(_target("gravity"))}
    finally:
        monkeypatch.undo()
        host_file.close()
    leak = outcomes["inherited descriptors at rlimits-only"]
    assert not leak.ok and "sandbox.log" in leak.observed, leak


# ---- tpbench's verifier at each isolation level, and Harbor's reward ------------------------
def test_the_tpbench_verifier_is_held_at_every_level():
    from discoverygym.sandbox.attacks import working_levels
    from discoverygym.suites.tpbench.attacks import level_attacks

    assert "tpbench-levels" in {f.name for f in get_suite("tpbench").audit_attacks()}
    outcomes = level_attacks(_target("tpbench"))
    assert len(outcomes) == len(working_levels()) and all(o.ok for o in outcomes), outcomes
    weakest = [o for o in outcomes if "package at rlimits-only" in o.attack]
    assert all("verdict=refused" in o.observed for o in weakest)


def test_the_harbor_reward_is_held_at_every_level_a_door_family_played_on_tpbench():
    """The Harbor verifier's attack is the door's (declared beside it), played with the
    answer that runs code which the suite supplies; a suite whose answers never run as
    code is not attacked by it."""
    from discoverygym.doors.harbor import attacks as harbor_attacks
    from discoverygym.sandbox.attacks import working_levels

    assert "discoverygym.doors.harbor.attacks" in PLATFORM_ATTACK_MODULES
    family = {f.name: f for f in harbor_attacks.ATTACKS}["harbor-levels"]
    assert family.needs_interpreter
    assert family.applies(_target("tpbench")) and not family.applies(_target("gravity"))
    outcomes = harbor_attacks.reward_forger_attacks(_target("tpbench"))
    assert len(outcomes) == len(working_levels()) and all(o.ok for o in outcomes), outcomes


def test_without_the_minimum_level_the_tpbench_and_harbor_families_find_both_holes(
        monkeypatch):
    """The defence removed: the verifier runs answers at rlimits-only. The stolen
    reference passes and the detached process rewrites Harbor's reward."""
    from discoverygym.doors.harbor.attacks import reward_forger_attacks
    from discoverygym.sandbox import attacks as sandbox_attacks
    from discoverygym.suites.tpbench import verifier
    from discoverygym.suites.tpbench.attacks import level_attacks

    monkeypatch.setattr(sandbox_attacks, "working_levels", lambda: ["rlimits-only"])
    monkeypatch.setattr(verifier.run_function, "__kwdefaults__", {"minimum_isolation": None})
    (steal,) = level_attacks(_target("tpbench"))
    (forge,) = reward_forger_attacks(_target("tpbench"))
    assert not steal.ok and "passed=True" in steal.observed, steal
    assert not forge.ok and "FORGED" in forge.observed, forge
