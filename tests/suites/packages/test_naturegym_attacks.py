"""The audit's `release` and `build` families (issue #38 item 7), declared beside what
they attack (naturegym/attacks.py): held on the current code, and each attack a finding
once its defence is switched off."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from discoverygym.audit import PLATFORM_ATTACK_MODULES
from discoverygym.core import get_suite
from discoverygym.core.audit_registry import AuditTarget
from discoverygym.naturegym import attacks, release
from discoverygym.naturegym.generate import public_key

# the module (the package's `build` is the function)
build_driver = importlib.import_module("discoverygym.naturegym.build")


def _target(**scope) -> AuditTarget:
    return AuditTarget(get_suite("packages"), scope, interpreter=False)


def test_the_families_are_played_by_the_packages_audit_and_not_for_a_users_package(
        tmp_path):
    assert "discoverygym.naturegym.attacks" in PLATFORM_ATTACK_MODULES
    assert [f.name for f in attacks.ATTACKS] == ["release", "build"]
    assert all(f.applies(_target()) for f in attacks.ATTACKS)
    assert not any(f.applies(_target(package=str(tmp_path))) for f in attacks.ATTACKS)
    gravity = AuditTarget(get_suite("gravity"), interpreter=False)
    assert not any(f.applies(gravity) for f in attacks.ATTACKS)  # played once, not per suite


def test_the_build_family_holds():
    outcomes = attacks.build_attacks(_target())
    assert [o.ok for o in outcomes] == [True, True], outcomes
    assert "a FIFO, not a regular file" in outcomes[0].observed
    assert "lost: nothing" in outcomes[1].observed


def test_without_the_defences_the_build_family_finds_both_holes(monkeypatch):
    """The record opened as before (a blocking open: the audit reports the hang and
    frees it), and every folder taken for the build's own (as before the marker)."""
    monkeypatch.setattr(build_driver, "_ours", lambda folder: True)
    outcomes = attacks.build_attacks(_target(), load=lambda path: Path(path).read_bytes())
    assert [o.ok for o in outcomes] == [False, False], outcomes
    assert "a hang" in outcomes[0].observed
    assert "intake" in outcomes[1].observed and ".tmp-notes" in outcomes[1].observed
    assert ".old-photos" in outcomes[1].observed


@pytest.fixture(scope="module")
def held():
    return attacks.release_attacks(_target())


@pytest.mark.slow
def test_the_release_family_holds(held):
    assert len(held) == 5 and all(o.ok for o in held), held
    assert all(o.observed.startswith("refused:") for o in held)


@pytest.mark.slow
def test_without_the_defences_the_release_family_finds_every_hole(monkeypatch):
    """As before: a commitment not asked for, a public release's seed used whatever key
    was given, only the set of package names compared, empty folders unseen."""
    def old_key(data, key, commitment):
        if data.get("mode") == "public":
            return public_key(data["seed"])
        return key

    def old_listing(directory, data):
        listed = {p["id"] for p in data["packages"]}
        present = {p.name for p in directory.iterdir() if p.name != release.MANIFEST}
        if present != listed:
            raise release.ReleaseMismatch("different packages")

    monkeypatch.setattr(release, "_checked_key", old_key)
    monkeypatch.setattr(release, "_check_listing", old_listing)
    monkeypatch.setattr(release, "_refuse_empty", lambda *args: None)
    outcomes = attacks.release_attacks(
        _target(), verify=lambda d, k, c=None: release.verify_release(d, k))
    found = {o.attack: o for o in outcomes}
    for attack in ("a release made with another key than the published commitment's",
                   "a public-seed release checked as keyed",
                   "a package removed from folder and manifest",
                   "an empty folder added inside a package"):
        assert not found[attack].ok and found[attack].observed == "accepted", found[attack]
    # an extra file beside the packages was refused before too (without naming it)
    assert found["a file added beside the packages"].observed.startswith("refused")
