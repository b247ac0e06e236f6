"""The audit's registry: families of cheating agents, each declared beside what it attacks.

`discoverygym audit` (audit.py) only collects and plays them. A family is an
`AttackFamily`: a name, one line on what it plays, and a function `run(target) ->
list[Outcome]` that plays its attacks against an `AuditTarget` through the doors an
agent has (tools, files, interpreter, answers, records) and says for each what should
have happened and what did.

Where a family is declared:

- a suite's own attacks in the suite's folder (`suites/<suite>/attacks.py`), returned by
  its `Suite.audit_attacks()`;
- the platform's (tool arguments, the interpreter, the sandbox, a door, the readers)
  beside the part they attack, in a module with a module-level `ATTACKS` tuple that
  audit.py lists in `PLATFORM_ATTACK_MODULES`.

A new family is one function and one `AttackFamily(...)` line in such a tuple:

    def reward_overwrite(target: AuditTarget) -> list[Outcome]:
        return [guard("harbor", "overwrite the reward file", "the verifier's reward wins",
                      lambda: (ok, observed))]

    ATTACKS = (AttackFamily("harbor", "rewrite reward.txt after the verifier",
                            reward_overwrite),)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .keys import keys_dropped_after

if TYPE_CHECKING:
    from .episode import Episode
    from .suite import EpisodeSpec, Suite


@dataclass
class Outcome:
    """One attack: what it is, what should happen, what did, and whether they agree."""

    family: str
    attack: str
    expected: str
    observed: str
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AuditTarget:
    """What one audit plays against: a suite; its `scope`, the audit options that narrow
    it (a package folder, a problem file), which the suite reads in `audit_case` and
    its own attacks; the seed the case is played with (None: the suite's first default
    seed); and whether attacks from inside the interpreter are wanted."""

    suite: Suite
    scope: Mapping[str, Any] = field(default_factory=dict)
    interpreter: bool = True
    seed: int | None = None

    @property
    def episode_seed(self) -> int:
        """The seed the audit's episodes are played with."""
        return self.suite.default_seeds[0] if self.seed is None else self.seed

    def episode_spec(self) -> EpisodeSpec:
        """The episode the platform's attacks play on: `Suite.audit_case` on the seed,
        crossed by the grid as every run's episodes are."""
        from .suite import cross

        return cross(self.suite.name, [self.suite.audit_case(dict(self.scope))],
                     [self.episode_seed])[0]

    def make_episode(self) -> Episode:
        """A fresh episode of `episode_spec()`."""
        spec = self.episode_spec()
        return self.suite.episode(spec.task_id, seed=spec.seed, **spec.options)


@dataclass(frozen=True)
class AttackFamily:
    """A family of attacks, declared beside what it attacks.

    `run` plays every attack of the family against the target and returns one Outcome
    each; an exception out of it is itself reported as a finding. `applies` says whether
    the family concerns this target (default: every target). `needs_interpreter`
    families are skipped by `audit --no-interpreter`."""

    name: str
    summary: str
    run: Callable[[AuditTarget], list[Outcome]]
    applies: Callable[[AuditTarget], bool] = lambda target: True
    needs_interpreter: bool = False


def guard(family: str, attack: str, expected: str,
          fn: Callable[[], tuple[bool, str]]) -> Outcome:
    """Run one attack (`fn` returns ok and what was observed); an exception out of the
    platform is itself a finding."""
    try:
        ok, observed = fn()
    except Exception as exc:  # noqa: BLE001 - the audit reports, it does not crash
        ok, observed = False, f"the platform raised {type(exc).__name__}: {str(exc)[:200]}"
    return Outcome(family, attack, expected, observed, ok)


def play(families: list[AttackFamily], target: AuditTarget) -> list[Outcome]:
    """Every family that applies to `target`, in order; a family that crashes gives one
    finding instead of its outcomes."""
    outcomes: list[Outcome] = []
    for family in families:
        if family.needs_interpreter and not target.interpreter:
            continue
        if not family.applies(target):
            continue
        try:
            with keys_dropped_after():  # a family's test keys are its own
                outcomes += family.run(target)
        except Exception as exc:  # noqa: BLE001 - one broken family must not hide the rest
            outcomes.append(Outcome(family.name, family.summary, "the attacks run",
                                    f"the family raised {type(exc).__name__}: "
                                    f"{str(exc)[:200]}", False))
    return outcomes


def where_importable(module: str) -> Callable[[AuditTarget], bool]:
    """An `applies` predicate: the family concerns a target where `module` itself is
    importable (a dotted name such as `mcp.server.lowlevel`, so that a folder called
    `mcp` on sys.path, a test tree's namespace, does not count)."""
    import importlib.util

    def applies(target: AuditTarget) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            return False

    return applies
