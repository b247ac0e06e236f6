"""How a mad prediction is scored: skill against the task's reference forecast (the
trivial one, or normal physics under the discovery protocol), and the pass rule. Each
world measures its own error (`World.error`); the law score of `describe_law` is in
`law_rollout.py`."""

from __future__ import annotations

# A prediction passes when its skill against the suite's reference is at least this.
PASS_SKILL = 0.5


def skill_score(error: float, reference_error: float) -> float:
    """1 - error / reference error: 1 is perfect, 0 is no better than the reference,
    negative is worse. A zero reference error gives 0 skill unless the error is 0 too."""
    if reference_error <= 0:
        return 1.0 if error <= 0 else 0.0
    return 1.0 - error / reference_error
