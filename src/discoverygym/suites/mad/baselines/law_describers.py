"""Baselines of the law score (`details.law_score`): the world's honest normal-physics
baseline plays the episode, and before its final answer states a law through
`describe_law`.

- `law-normal`: states normal physics (Newton's pair force, no extra fluid term, the
  Born rule). Public knowledge, not privileged; it scores ~0 in every altered world.
- `law-true`: states the world's true law, built from the hidden law (privileged, like
  the stargazer oracle); it scores ~1 in every world.

Their predictions are the normal-physics baseline's, so only the law score differs."""

from __future__ import annotations

from typing import Any

from ....core import EpisodeView, ToolResult
from .. import law_sources
from .classical import Newtonian
from .fluid_quantum import FluidNavierStokes, QuantumSchrodinger

NORMAL_PHYSICS = {"classical": Newtonian, "fluid": FluidNavierStokes,
                  "quantum": QuantumSchrodinger}
FINAL_TOOLS = ("predict", "submit_estimate")


class _DescribingView:
    """An agent view that calls describe_law once, just before the first final answer."""

    def __init__(self, view: EpisodeView, source: str, text: str) -> None:
        self._view, self._source, self._text = view, source, text
        self.prompt = view.prompt
        self.described: ToolResult | None = None

    def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        if (name in FINAL_TOOLS and self.described is None
                and "describe_law" in self._view.tool_names()):
            self.described = self._view.call(
                "describe_law", {"text": self._text, "python_source": self._source})
        return self._view.call(name, args)

    def tools(self) -> list[dict[str, Any]]:
        return self._view.tools()

    def tool_names(self) -> list[str]:
        return self._view.tool_names()

    def workspace(self) -> dict[str, Any]:
        return self._view.workspace()

    @property
    def done(self) -> bool:
        return self._view.done


def _world_name(view: EpisodeView) -> str:
    return str(view.workspace()["world_facts"].get("world"))


def _play(view: EpisodeView, source: str, text: str) -> None:
    describing = _DescribingView(view, source, text)
    NORMAL_PHYSICS[_world_name(view)]().solve(describing)
    if describing.described is not None and describing.described.is_error:
        raise RuntimeError(f"describe_law refused: {describing.described.text[:300]}")


class LawNormal:
    """Normal physics as the stated law."""

    def solve(self, view: EpisodeView) -> None:
        _play(view, law_sources.normal_law_source(_world_name(view)), "normal physics")


class LawTrue:
    """The world's true law as the stated law (privileged)."""

    privileged = True

    def solve_privileged(self, episode: Any) -> None:
        source = law_sources.true_law_source(episode._world)
        _play(episode.view(), source, "the true law")

    def solve(self, view: EpisodeView) -> None:  # pragma: no cover - needs the episode
        raise RuntimeError("law-true needs the episode itself (privileged agent)")


