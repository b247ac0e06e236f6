"""The oracle: a privileged calibration agent that submits the exact truth (with the
true jitter). It proves every task solvable; its records are flagged privileged."""

from __future__ import annotations

from .episode import StargazerEpisode


class Oracle:
    """Submits the hidden truth once through the episode's own `submit` tool."""

    privileged = True

    def solve_privileged(self, episode: StargazerEpisode) -> None:
        result = episode.call("submit", episode.truth_submission())
        if not episode.done:
            episode.call("end", {})
        if result.is_error:
            raise RuntimeError(f"oracle submission rejected: {result.text}")

    def solve(self, view) -> None:  # pragma: no cover - never called for privileged agents
        raise RuntimeError("the oracle needs the episode itself (privileged agent)")
