"""The layering rules hold: `lint-imports` (import-linter) checks the contracts in
pyproject.toml's [tool.importlinter] against the package, and the same contracts catch
an import planted against each rule in a copy of the package.

The contracts, not this file, say what the rules are (the package root importing
nothing, core below everything, physics and networks shared, suites independent, no suite importing
the runner, a door or the command line, nothing above the suites importing one). The
debts of issue #26 are paid, so no contract lists `ignore_imports`; an entry added
later must match an import (test_a_paid_debt_must_leave_the_list). Import cycles are
tests/project/test_import_cycles.py's concern."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testpaths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

SRC = REPO / "src"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]


def _lint(cwd: Path, src: Path) -> subprocess.CompletedProcess:
    """Run lint-imports with the pyproject.toml in `cwd` over the package under `src`."""
    assert LINT_IMPORTS.exists(), "lint-imports is missing: install the [dev] extra"
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def _contract(contract_id: str) -> dict:
    return next(c for c in CONFIG["contracts"] if c["id"] == contract_id)


def test_the_package_keeps_every_layering_contract():
    result = _lint(REPO, SRC)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in result.stdout


def _top_level_modules() -> set[str]:
    package = SRC / "discoverygym"
    names = {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    names |= {p.parent.name for p in package.glob("*/__init__.py")}
    return {f"discoverygym.{name}" for name in names}


@pytest.mark.parametrize("contract_id,allowed", [
    ("core-below-all", {"discoverygym.core"}),
    ("physics-shared", {"discoverygym.physics"}),
    ("networks-shared", {"discoverygym.networks"}),
    ("naturegym-below-suites", {"discoverygym.core", "discoverygym.physics",
                                "discoverygym.networks", "discoverygym.naturegym"}),
])
def test_the_bottom_layers_forbid_every_other_top_level_module(contract_id, allowed):
    """A forbidden contract lists what it forbids; a top-level module added later must
    join the list, or core (or physics, networks, naturegym) could import it unnoticed."""
    forbidden = set(_contract(contract_id)["forbidden_modules"])
    assert forbidden == _top_level_modules() - allowed


def test_every_module_above_the_suites_reaches_them_only_through_the_registry():
    """A top-level module added later joins the sources of `suites-through-registry`,
    or it could import a suite unnoticed."""
    sources = set(_contract("suites-through-registry")["source_modules"])
    below = {"discoverygym.core", "discoverygym.physics", "discoverygym.networks",
             "discoverygym.naturegym", "discoverygym.suites"}
    assert sources == _top_level_modules() - below


def test_core_names_no_suite():
    """The built-in suites' rows and stream numbers live with the suites: no string in
    core names a module inside a suite or a built-in suite, and core's registry is empty
    until it loads the suites package like a plugin. (core/extras.py names pyproject's
    install extras, some of which are called after suites; it is left out.)"""
    import ast

    import discoverygym.suites as builtin

    names = set(builtin.ENTRIES)
    assert names == {"gravity", "stargazer", "mad", "tpbench", "packages"}
    for path in sorted((SRC / "discoverygym" / "core").glob("*.py")):
        if path.name == "extras.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert "discoverygym.suites." not in node.value, (path.name, node.value)
                assert node.value not in names, (path.name, node.value)
                assert not any(node.value.startswith(f"{n}:") for n in names), node.value


# One planted import per rule, each inside a function (a lazy import still counts).
PLANTED = {
    "__init__.py": ("discoverygym.physics.kepler", "root-imports-nothing"),
    "core/limits.py": ("discoverygym.suites.gravity.suite", "core-below-all"),
    "physics/kepler.py": ("discoverygym.core.errors", "physics-shared"),
    "networks/sbm.py": ("discoverygym.naturegym.families.base", "networks-shared"),
    "suites/tpbench/scoring.py": ("discoverygym.suites.gravity.truths", "suites-independent"),
    "suites/mad/report.py": ("discoverygym.run.records", "suites-not-runner"),
    "suites/stargazer/bank.py": ("discoverygym.cli_args", "suites-not-doors"),
    "doors/mcp/server.py": ("discoverygym.suites.stargazer.baselines.agents",
                            "suites-through-registry"),
    "doors/gym/env.py": ("discoverygym.doors.openenv.bounds", "doors-independent"),
    # the Inspect door's scripted policies find gravity's expert through the registry
    "doors/inspect/policies.py": ("discoverygym.suites.gravity.baselines.conversation",
                                  "suites-through-registry"),
    "run/summary.py": ("discoverygym.suites.gravity.suite", "suites-through-registry"),
}


def _copy_package(tmp_path: Path) -> Path:
    """The package's Python files and pyproject.toml under tmp_path (data left out)."""
    shutil.copytree(SRC / "discoverygym", tmp_path / "src" / "discoverygym",
                    ignore=lambda folder, names: [
                        n for n in names if n == "__pycache__"
                        or not (n.endswith(".py") or (Path(folder) / n).is_dir())])
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path / "src"


def test_a_planted_import_against_each_rule_is_caught(tmp_path):
    src = _copy_package(tmp_path)
    for relative, (target, _) in PLANTED.items():
        path = src / "discoverygym" / relative
        path.write_text(path.read_text()
                        + f"\n\ndef _planted():\n    import {target}  # noqa: F401\n")
    result = _lint(tmp_path, src)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    broken = {contract_id for _, contract_id in PLANTED.values()}
    # naturegym's audit families (naturegym/attacks.py) use core's audit registry, which
    # reaches core/suite.py and so core/limits.py: core's planted import breaks it too
    broken.add("naturegym-below-suites")
    assert f"{len(broken)} broken." in out, out
    flat = " ".join(out.split())  # the report wraps long lines
    for contract_id in broken:
        assert f"{_contract(contract_id)['name']} BROKEN" in flat, out
    for relative, (target, _) in PLANTED.items():
        importer = ".".join(["discoverygym", *Path(relative).with_suffix("").parts])
        importer = importer.removesuffix(".__init__")
        assert f"{importer} -> {target}" in flat, (importer, target, out)


def test_a_paid_debt_must_leave_the_list(tmp_path):
    """An `ignore_imports` entry that matches no import fails, so a debt paid must leave
    the list (today the list is empty: every debt of issue #26 is paid). The entry
    planted is a debt that was paid: the packages suite reading records through the
    runner (it reads them through core now)."""
    src = _copy_package(tmp_path)
    config = tmp_path / "pyproject.toml"
    text = config.read_text()
    contract = 'forbidden_modules = ["discoverygym.run"]\n'
    assert text.count(contract) == 1
    config.write_text(text.replace(contract, contract + 'ignore_imports = '
                                   '["discoverygym.suites.packages.validity -> '
                                   'discoverygym.run"]\n'))
    result = _lint(tmp_path, src)
    assert result.returncode == 1, result.stdout + result.stderr
    flat = " ".join((result.stdout + result.stderr).split())
    assert "discoverygym.suites.packages.validity -> discoverygym.run" in flat, flat
    assert "No matches for ignored import" in flat, flat
