"""The audit's families of issue #38 (keys, the key file, the Harbor verifier's
secrets), each declared beside what it attacks: held on the current code, and a finding
once its defence is switched off (the attack is real)."""

from __future__ import annotations

import importlib
import sys

import pytest

from discoverygym.audit import PLATFORM_ATTACK_MODULES, families
from discoverygym.core import get_suite, keys
from discoverygym.core.audit_registry import AuditTarget
from discoverygym.core.key_attacks import key_attacks
from discoverygym.sandbox import LEVELS
from discoverygym.sandbox.attacks import key_file_attacks
from discoverygym.sandbox.isolation import _level_works

WORKING = [lvl for lvl in LEVELS if _level_works(lvl, sys.executable)]


def _target(suite: str, interpreter: bool = True) -> AuditTarget:
    return AuditTarget(get_suite(suite), interpreter=interpreter)


def test_the_families_are_declared_beside_what_they_attack():
    assert "discoverygym.core.key_attacks" in PLATFORM_ATTACK_MODULES
    names = {f.name for f in families(_target("tpbench"))}
    assert {"keys", "key-file", "harbor-secrets"} <= names
    declared = {m: [f.name for f in importlib.import_module(m).ATTACKS]
                for m in ("discoverygym.core.key_attacks", "discoverygym.sandbox.attacks",
                          "discoverygym.doors.harbor.attacks")}
    assert "keys" in declared["discoverygym.core.key_attacks"]
    assert "key-file" in declared["discoverygym.sandbox.attacks"]
    assert "harbor-secrets" in declared["discoverygym.doors.harbor.attacks"]


def test_weak_and_open_keys_are_held_and_found_without_the_checks(monkeypatch):
    outcomes = key_attacks(_target("gravity", interpreter=False))
    assert len(outcomes) == 10 and all(o.ok for o in outcomes), outcomes
    # the checks switched off: a reader that neither checks strength nor mode
    monkeypatch.setattr(keys, "check_key_strength", lambda key: key)

    def lax_read(path):
        return keys.Key(bytes.fromhex(path.read_text().strip()))

    found = key_attacks(_target("gravity", interpreter=False), read=lax_read)
    failed = [o.attack for o in found if not o.ok]
    assert len(failed) == 10, found


def test_the_key_file_is_held_at_every_level_and_found_without_the_hand_off():
    held = key_file_attacks(_target("gravity"))
    assert [o.attack.rsplit(" ", 1)[1] for o in held] == WORKING
    assert all(o.ok for o in held), held
    if "rlimits-uid" in WORKING:
        found = {o.attack.rsplit(" ", 1)[1]: o for o in
                 key_file_attacks(_target("gravity"), hand_off=False)}
        assert not found["rlimits-uid"].ok and "cmdline" in found["rlimits-uid"].observed


@pytest.mark.skipif("rlimits-uid" not in WORKING, reason="no uid level here")
def test_the_key_file_is_found_at_rlimits_uid_without_the_seal(monkeypatch):
    """The seal switched off (no key file among the hidden paths): the key file, open to
    every user, is read from inside the sandbox."""
    monkeypatch.setattr(keys, "key_files_read", lambda: ())
    found = {o.attack.rsplit(" ", 1)[1]: o for o in key_file_attacks(_target("gravity"))}
    assert not found["rlimits-uid"].ok and "key file read" in found["rlimits-uid"].observed


@pytest.mark.skipif("rlimits-only" not in WORKING, reason="no rlimits-only level here")
def test_a_process_holding_a_key_runs_nothing_at_rlimits_only(monkeypatch):
    """At rlimits-only the sandbox is this process's own user: while a key is held the
    level is refused in one line (the family sees the refusal); with the refusal
    switched off, the scan opens the key file (the hole the refusal closes)."""
    from discoverygym.sandbox import SandboxConfig, SandboxUnavailable, isolation, run_isolated
    from discoverygym.sandbox.attacks import forced_level

    monkeypatch.setattr(keys, "_KEY_FILES", set())
    monkeypatch.setattr(keys, "_HANDED", {})
    for name in (keys.KEY_ENV, keys.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    with forced_level("rlimits-only"):
        assert run_isolated("print(7)", config=SandboxConfig(preload={})).stdout.strip() == b"7"
        monkeypatch.setenv(keys.KEY_FILE_ENV, "/nowhere/eval.key")
        with pytest.raises(SandboxUnavailable, match="keyed run needs 'rlimits-uid'"):
            run_isolated("print(7)", config=SandboxConfig(preload={}))
    held = {o.attack.rsplit(" ", 1)[1]: o for o in key_file_attacks(_target("gravity"))}
    assert held["rlimits-only"].ok and "refused" in held["rlimits-only"].observed
    monkeypatch.setattr(isolation, "_holds_key", lambda: False)
    found = {o.attack.rsplit(" ", 1)[1]: o for o in key_file_attacks(_target("gravity"))}
    assert not found["rlimits-only"].ok and "key file read" in found["rlimits-only"].observed


def test_the_harbor_secrets_are_held_and_found_without_their_defences(monkeypatch):
    import json

    from discoverygym.doors.harbor import attacks, keyed
    from discoverygym.doors.harbor import verify as harbor_verify

    target = _target("tpbench")
    held = attacks.harbor_secret_attacks(target)
    assert held and all(o.ok for o in held), held
    monkeypatch.setattr(harbor_verify, "take_spec", lambda p: json.loads(p.read_text()))
    monkeypatch.setattr(harbor_verify, "scrub", lambda record, secret: record)
    monkeypatch.setattr(harbor_verify, "clear_outputs", lambda logs: None)
    monkeypatch.setattr(keyed, "task_key", lambda export_key, spec: export_key)
    found = attacks.harbor_secret_attacks(target)
    assert not any(o.ok for o in found), found
