"""The audit's attacks on gravity (see core.audit_registry): a blind answer to the yes/no
questions whose answer the kind of a procedural world gives away. Without the leak-free
setup's twins, `true` is right on 22 of the 26 worlds of seeds 0-39 that ask is_bound
(and on 22 of 29 that ask kepler_3rd_law). Declared here, beside the suite they attack,
and returned by `GravitySuite.audit_attacks`."""

from __future__ import annotations

from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

#: calibrate's leak line for a yes/no question: chance (0.5) plus its MARGIN (0.2)
LEAK_LINE = 0.7
WORLD_SEEDS = "0-39"
QUESTIONS = ("is_bound", "kepler_3rd_law")


def blind_answer_attacks(target: AuditTarget, setup: str = "leak-free") -> list[Outcome]:
    """For each question and each blind answer (`true`, `false`): submit it, without one
    observation, on every procedural world of WORLD_SEEDS that asks the question (on the
    audit's episode seed, 0 by default), and count the passes. Expected: at most LEAK_LINE of them."""
    suite = target.suite
    outcomes = []
    for task_id in QUESTIONS:
        specs = suite.episodes([target.episode_seed], world_seeds=WORLD_SEEDS, tasks=task_id,
                               setup=setup)
        for answer in (True, False):
            def attack(specs=specs, answer=answer) -> tuple[bool, str]:
                passed = 0
                for spec in specs:
                    episode = suite.episode(spec.task_id, seed=spec.seed, **spec.options)
                    episode.view().call("submit", {"answer": answer})
                    passed += int(episode.record(agent="audit").passed)
                rate = passed / len(specs)
                return rate <= LEAK_LINE, f"passed {passed}/{len(specs)} ({rate:.0%})"
            outcomes.append(guard(
                "procedural", f"answer {str(answer).lower()} to {task_id} blind, world seeds "
                f"{WORLD_SEEDS}", f"passes at most {LEAK_LINE:.0%}", attack))
    return outcomes


ATTACKS = (
    AttackFamily("procedural", "a blind true or false to the yes/no questions the kind of "
                 "a procedural world answers (is_bound, kepler_3rd_law)",
                 blind_answer_attacks),
)
