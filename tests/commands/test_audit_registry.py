"""The audit's registry: attacks declared beside what they attack, collected by an
audit.py that names no suite and patches nothing; a suite (a plugin too) adds a family
by declaring it; a broken family is a finding, not a crash."""

from __future__ import annotations

import ast
import importlib
import inspect
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym import audit as audit_module
from discoverygym.audit import PLATFORM_ATTACK_MODULES, audit, families
from discoverygym.calibrate import MARGIN
from discoverygym.cli import app
from discoverygym.core import get_suite, register_suite
from discoverygym.core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

SUITES = ("gravity", "stargazer", "mad", "tpbench", "packages")


# ---- a plugin suite that declares its own attacks -----------------------------------------
def _probe_past_the_range(target: AuditTarget) -> list[Outcome]:
    def attack() -> tuple[bool, str]:
        episode = target.make_episode()
        result = episode.call("probe", {"x": 1e9})
        return result.is_error, f"error={result.is_error}"
    return [guard("toy", "probe far outside [0, 100]", "refused", attack)]


def _broken(target: AuditTarget) -> list[Outcome]:
    raise RuntimeError("the family itself is broken")


def _never(target: AuditTarget) -> list[Outcome]:
    raise AssertionError("a family that does not apply must not run")


class AttackedToySuite(toy_suite.ToySuite):
    def audit_attacks(self) -> tuple[Any, ...]:
        return (AttackFamily("toy", "a probe outside the range", _probe_past_the_range),
                AttackFamily("broken", "a family that raises", _broken),
                AttackFamily("elsewhere", "applies to no toy", _never,
                             applies=lambda target: False),
                AttackFamily("inside", "needs the interpreter", _never,
                             needs_interpreter=True))


register_suite("toy-attacked", f"{__name__}:AttackedToySuite")


def test_a_suite_declares_its_attacks_and_the_audit_plays_them_with_the_platforms():
    outcomes = audit("toy-attacked", interpreter=False)
    by_family: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_family.setdefault(outcome.family, []).append(outcome)
    assert [o.ok for o in by_family["toy"]] == [True]
    (broken,) = by_family["broken"]  # one finding that says why, the rest still played
    assert not broken.ok and "RuntimeError" in broken.observed
    assert "elsewhere" not in by_family and "inside" not in by_family
    assert by_family["arguments"] and all(o.ok for o in by_family["arguments"])


def test_the_command_reports_a_broken_family_as_a_finding():
    result = CliRunner().invoke(app, ["audit", "toy-attacked", "--no-interpreter"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 1 and "FINDING" in result.output


def test_a_scope_the_suite_does_not_take_is_one_line_refused():
    with pytest.raises(ValueError, match="--problems"):
        audit("gravity", problems="x.json", interpreter=False)
    result = CliRunner().invoke(app, ["audit", "stargazer", "--package", "/nonexistent"])
    assert result.exit_code != 0 and "error" in result.output
    assert "Traceback" not in result.output


# ---- where the attacks live -----------------------------------------------------------------
def test_audit_names_no_suite_and_assigns_no_module_global():
    source = inspect.getsource(audit_module)
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert "suites" not in (node.module or ""), node.module
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert node.value not in SUITES, node.value
            assert ".suites." not in node.value
        if isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assert not any(isinstance(t, ast.Attribute) for t in targets), ast.dump(node)


@pytest.mark.parametrize("suite", SUITES)
def test_each_family_is_declared_beside_what_it_attacks(suite):
    target = AuditTarget(get_suite(suite))
    own = target.suite.audit_attacks()
    for family in own:
        assert family.run.__module__.startswith(f"discoverygym.suites.{suite}."), family
    platform = [f for name in PLATFORM_ATTACK_MODULES
                for f in importlib.import_module(name).ATTACKS]
    for name in PLATFORM_ATTACK_MODULES:
        for family in importlib.import_module(name).ATTACKS:
            assert family.run.__module__ == name
    assert families(target) == [*own, *platform]
    names = [f.name for f in families(target)]
    assert len(names) == len(set(names))


def test_the_shipped_families():
    assert {f.name for f in get_suite("gravity").audit_attacks()} == {"procedural"}
    assert {f.name for f in get_suite("packages").audit_attacks()} == {"packages"}
    assert {f.name for f in get_suite("tpbench").audit_attacks()} == {"tpbench", "tpbench-levels"}
    assert get_suite("stargazer").audit_attacks() == () == get_suite("mad").audit_attacks()
    platform = {f.name for m in PLATFORM_ATTACK_MODULES
                for f in importlib.import_module(m).ATTACKS}
    assert platform == {"arguments", "rebuild", "keys", "interpreter", "harbor-levels",
                        "harbor-secrets", "mcp-race", "sandbox", "key-file", "openenv-capacity",
                        "readers", "forged-runs", "release", "build"}


# ---- tpbench: a limit passed, not a global patched -------------------------------------------
def test_the_tpbench_attack_passes_its_limit_instead_of_patching_compare(tmp_path):
    from discoverygym.suites.tpbench import attacks, compare

    before = compare.TIME_LIMIT_S
    # a problem whose answer is one expression, so the bomb reaches the symbolic
    # comparison (on a tuple answer it is refused at once, before any limit)
    scalar = Path(compare.__file__).parent / "problems" / "annulus-axis-field.yaml"
    shutil.copy(scalar, tmp_path / scalar.name)
    target = AuditTarget(get_suite("tpbench"), scope={"problems": str(tmp_path)})
    outcomes = attacks.verifier_attacks(target, limit_s=1.0)
    assert compare.TIME_LIMIT_S == before
    assert [o.ok for o in outcomes] == [True] * len(attacks.ANSWERS), outcomes
    # the bomb is stopped at the limit it was given (the suite's own is 20 s)
    (bomb,) = [o for o in outcomes if o.attack.startswith("symbolic bomb")]
    assert "stopped after the 1 s limit" in bomb.observed, bomb


# ---- gravity: the blind guess on procedural worlds ------------------------------------------
def test_the_gravity_leak_line_is_calibrates():
    from discoverygym.suites.gravity import attacks

    assert attacks.LEAK_LINE == pytest.approx(0.5 + MARGIN)


@pytest.mark.slow
def test_the_blind_guess_attack_finds_the_leak_without_the_twins():
    """Played with the published setup (the drawn worlds, no twins), the attack finds
    that `true` passes procedural is_bound (22/26) and kepler_3rd_law (22/29); with the
    default setup it finds nothing."""
    from discoverygym.suites.gravity.attacks import blind_answer_attacks

    target = AuditTarget(get_suite("gravity"))
    without = {o.attack.split(" blind")[0]: o for o in
               blind_answer_attacks(target, setup="published")}
    assert not without["answer true to is_bound"].ok
    assert "22/26" in without["answer true to is_bound"].observed
    assert not without["answer true to kepler_3rd_law"].ok
    assert all(o.ok for o in blind_answer_attacks(target))


def test_a_familys_key_files_are_forgotten_when_it_ends(tmp_path):
    """A family that reads a key file (a Harbor spec, a test key) must not leave this
    process holding a key: the families after it would find the rlimits-only sandbox
    refused."""
    from discoverygym.core import keys
    from discoverygym.core.audit_registry import AttackFamily, play

    def reads_a_key(target):
        keys.remember_key_file(tmp_path / "spec.json")
        assert keys.holds_key()
        return []

    play([AttackFamily("reader", "reads a key file", reads_a_key)], None)
    assert not keys.holds_key()
