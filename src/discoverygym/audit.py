"""`discoverygym audit SUITE`: play a library of cheating agents against a suite, a task
package or a problem file, and report for each attack what should happen and what did.

Every attack goes through the doors an agent has: the episode's tools, its files, its
sandboxed interpreter, its answers. A *finding* is an attack whose observed outcome is
not the expected one. The audit prints a table and exits 1 when there is any finding.

The attacks are declared beside what they attack (core/audit_registry.py says how):
the platform's in the modules of PLATFORM_ATTACK_MODULES, a suite's in its own folder
(`Suite.audit_attacks`). This module names no suite: it collects the families and plays
them."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .core import get_suite
from .core.audit_registry import AttackFamily, AuditTarget, Outcome, guard, play
from .core.grid import checked_seeds

__all__ = ["PLATFORM_ATTACK_MODULES", "AttackFamily", "AuditTarget", "Outcome", "audit",
           "families", "guard"]

#: Modules whose `ATTACKS` tuple holds the platform's families, which apply to every
#: suite: tool arguments (core), the keyed draws (core), the interpreter (the `python`
#: tool's door), the Harbor door's verifier, the sandbox at each isolation level, the
#: readers of records (report), `verify` on forged runs (run), NatureGym's release check
#: and build driver.
PLATFORM_ATTACK_MODULES = (
    "discoverygym.core.attacks",
    "discoverygym.core.keyed_attacks",
    "discoverygym.core.key_attacks",
    "discoverygym.doors.shared.interpreter_attacks",
    "discoverygym.doors.harbor.attacks",
    "discoverygym.doors.mcp.attacks",
    "discoverygym.doors.openenv.attacks",
    "discoverygym.sandbox.attacks",
    "discoverygym.report.attacks",
    "discoverygym.run.verify_attacks",
    "discoverygym.naturegym.attacks",
)


def families(target: AuditTarget) -> list[AttackFamily]:
    """The suite's own families first, then the platform's."""
    out = list(target.suite.audit_attacks())
    for name in PLATFORM_ATTACK_MODULES:
        out += list(importlib.import_module(name).ATTACKS)
    return out


def audit(suite: str, *, package: Path | None = None, problems: str | None = None,
          interpreter: bool = True, seeds: Sequence[int] | None = None) -> list[Outcome]:
    """All attacks that apply to `suite` (a package folder or a problem file narrows
    the target), played on the audit case with each of `seeds` (the runner's seeds;
    default: the suite's first default seed). With several seeds each outcome names
    its seed."""
    scope: dict[str, Any] = {}
    if package is not None:
        scope["package"] = package
    if problems is not None:
        scope["problems"] = problems
    chosen = get_suite(suite)
    seed_list: list[int | None] = list(checked_seeds(seeds)) if seeds is not None else [None]
    targets = [AuditTarget(chosen, scope, interpreter, seed) for seed in seed_list]
    for target in targets:  # a scope the suite does not take is refused before any attack
        target.episode_spec()
    outcomes = []
    for target in targets:
        played = play(families(target), target)
        if len(targets) > 1:  # name the seed, so that two seeds' outcomes read apart
            played = [replace(o, attack=f"{o.attack} (seed {target.seed})") for o in played]
        outcomes += played
    return outcomes
