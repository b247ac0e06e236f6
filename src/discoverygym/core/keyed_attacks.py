"""The audit's attack on the keyed draws (`Suite.keyed_episode`, core/keys.py): an agent
that holds the package rebuilds its own episode from the public seeds and submits the
rebuilt truth. Declared here, beside what it attacks (see audit_registry).

The attacker sees its episode's prompt and workspace. It rebuilds the suite's public
episode for the same task and options at the public seed and the next one, keeps the
rebuild that looks exactly like what it sees, lets the suite's calibration oracle play
that rebuild (the oracle knows the truth or the law) while every tool call it makes is
recorded, and replays those calls through its own episode's tools: the rebuilt truth,
submitted the way the suite takes it. Expected, with the audit's fresh key: no rebuild
matches and the submission fails. A finding is a rebuild that looks like the episode
and whose truth passes: one that looks the same but whose truth fails has not broken
the key (the draws that matter are keyed, just not shown), and a pass with no matching
rebuild is a lucky guess, which `calibrate` measures, not a rebuild. A suite without a
calibration oracle is judged on the match alone.

An episode that a suite declares public by nature (`Suite.public_by_nature`: a
published problem, a package's files) is reported as held *because said*: the key does
not hide it, the README and `calibrate` say so, and the attack is not played."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from typing import Any

from .audit_registry import AttackFamily, AuditTarget, Outcome, guard
from .keys import new_key
from .suite import EpisodeSpec, calibration_table, make_agent, play_agent

FAMILY = "rebuild"
#: Workspace entries that name where this process put things, not what was drawn.
RUN_DEPENDENT = ("DATA_DIR", "OUTPUT_DIR", "time_remaining_s")
#: How many public seeds the attacker tries from the episode's own (cheap, and enough:
#: a public draw matches at its own seed or not at all).
CANDIDATE_SEEDS = 2


def seen_digest(prompt: str, workspace: dict[str, Any]) -> str:
    """sha256 of what an agent sees of an episode: equal exactly when every number is
    equal to the bit (numpy arrays and frames by their bytes, floats by their hex)."""
    digest = hashlib.sha256()
    _feed([prompt, workspace], digest.update)
    return digest.hexdigest()


def _feed(value: Any, update: Callable[[bytes], Any]) -> None:
    import numpy as np

    if isinstance(value, dict):
        update(b"{")
        for name in sorted(value, key=str):
            if name not in RUN_DEPENDENT:
                update(repr(name).encode())
                _feed(value[name], update)
        update(b"}")
    elif isinstance(value, list | tuple):
        update(b"[")
        for item in value:
            _feed(item, update)
        update(b"]")
    elif hasattr(value, "columns") and hasattr(value, "to_numpy"):  # a pandas frame
        _feed({"columns": [str(c) for c in value.columns],
               **{str(c): value[c].to_numpy() for c in value.columns}}, update)
    elif isinstance(value, np.ndarray):
        update(f"{value.dtype}{value.shape}".encode())
        update(value.tobytes() if value.dtype != object else repr(value.tolist()).encode())
    elif isinstance(value, float):
        update(value.hex().encode())
    else:
        update(f"{type(value).__name__}:{value!r}".encode())


def public_candidates(spec: EpisodeSpec) -> list[EpisodeSpec]:
    """The attacker's search: the suite's public plan for this task and options at the
    episode's public seed and the next ones (no key: it has none)."""
    return [EpisodeSpec(spec.suite, spec.task_id, spec.seed + i, dict(spec.options))
            for i in range(CANDIDATE_SEEDS)]


def oracle_calls(suite: str, episode: Any) -> list[tuple[str, dict[str, Any] | None]]:
    """Let the suite's calibration oracle play `episode` (a rebuild the attacker holds
    whole) and return the tool calls it made, in order: the rebuilt truth as the suite's
    tools take it. A suite that declares no oracle gives none (the attack is then
    judged on the match alone)."""
    roles = calibration_table(suite) or {}
    oracles = roles.get("oracle") or []
    if not oracles:
        return []
    calls: list[tuple[str, dict[str, Any] | None]] = []
    real_call = episode.call

    def recording_call(name: str, args: dict[str, Any] | None = None) -> Any:
        calls.append((name, args))
        return real_call(name, args)

    episode.call = recording_call  # the view's closures look `call` up at call time
    play_agent(make_agent(suite, oracles[0]), episode)
    return calls


def rebuild_attack(target: AuditTarget, *, key_for: Callable[[EpisodeSpec], Any] | None = None
                   ) -> list[Outcome]:
    """Play the rebuild on the audit episode keyed with a fresh key (`key_for` gives the
    key; a test passes one that keys nothing to show the attack is real)."""
    spec = target.episode_spec()
    attack = f"rebuild {spec.task_id} from public seed {spec.seed} and submit its truth"
    expected = "no public rebuild matches the keyed episode and passes"
    reason = target.suite.public_by_nature(spec)
    if reason is not None:
        return [Outcome(FAMILY, attack, expected,
                        f"public by nature ({reason}): the key does not hide it, and the "
                        "README says so; not played", True)]

    def play() -> tuple[bool, str]:
        key = (key_for or (lambda _: new_key()))(spec)
        keyed = spec.with_key(key).build()
        view = keyed.view()
        seen = seen_digest(view.prompt, view.workspace())
        rebuilt = [candidate.build() for candidate in public_candidates(spec)]
        matches = [i for i, e in enumerate(rebuilt)
                   if seen_digest(e.prompt, e.workspace()) == seen]
        match = matches[0] if matches else None
        chosen = rebuilt[match if match is not None else 0]  # no match: its best guess
        calls = oracle_calls(spec.suite, chosen)
        for name, args in calls:
            if view.done:
                break
            view.call(name, args)
        record = keyed.record(agent="audit-rebuild")
        found = (f"rebuild at public seed {spec.seed + match} matches" if match is not None
                 else f"none of {len(rebuilt)} public rebuilds matches")
        if len(matches) > 1:  # what the agent sees does not tell the draws apart
            found = f"{len(matches)} of {len(rebuilt)} public rebuilds look the same"
        if not calls:  # judged on the match alone: one rebuild that is the episode
            return len(matches) != 1, f"{found}; no calibration oracle to submit its truth"
        score = record.score if record.score is not None and math.isfinite(record.score) else 0
        observed = f"{found}; the replayed submission passed={record.passed} (score {score:.3g})"
        if record.passed and not matches:
            observed += " by luck: no rebuild was the episode (calibrate measures guessing)"
        return not (matches and record.passed), observed
    return [guard(FAMILY, attack, expected, play)]


ATTACKS = (
    AttackFamily(FAMILY, "rebuild one's keyed episode from the package and the public seed, "
                 "submit the rebuilt truth", rebuild_attack),
)
