"""One gravity episode: a task on a world under a protocol, with the `observe` (budget
protocols only) and `submit` tools and the interpreter workspace."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...core import Budget, Episode, EpisodeRecord, Score, ToolInputError, ToolResult, ToolSpec
from .constants import G_SI
from .scoring import score_answer
from .simulate import trajectory
from .tasks import Task
from .worlds import WorldSpec

COLUMNS = ["time", "star1_x", "star1_y", "star1_z", "star2_x", "star2_y", "star2_z"]
PER_CALL_LIMIT = 10
DEFAULT_PROTOCOL = "budget-obs-100"
_BUDGET_RE = re.compile(r"^budget-obs-([1-9][0-9]*)$")


@dataclass(frozen=True)
class Protocol:
    """`full-obs` (the whole table up front) or `budget-obs-N` (N observations)."""

    name: str
    budget: int | None  # None for full-obs

    @property
    def full(self) -> bool:
        return self.budget is None


def parse_protocol(name: str) -> Protocol:
    """Parse "full-obs" or "budget-obs-N" (N a positive integer)."""
    if name == "full-obs":
        return Protocol(name, None)
    match = _BUDGET_RE.match(str(name))
    if not match:
        raise ValueError(f"Unknown protocol {name!r}. Protocols: 'full-obs' or "
                         "'budget-obs-N' with N a positive integer (e.g. budget-obs-100).")
    return Protocol(name, int(match.group(1)))


def _fmt(value: float) -> str:
    return f"{value:.10g}"


class GravityEpisode(Episode):
    """A task on a world. The trajectory, the truth and the world's inputs are private;
    agents see the prompt, the tools and the workspace only."""

    def __init__(self, task: Task, world: WorldSpec, protocol: Protocol, *, seed: int,
                 options: dict[str, Any], setup: str = "leak-free") -> None:
        super().__init__(suite="gravity", task_id=task.id, seed=seed, options=options,
                         world=world.id, protocol=protocol.name)
        self._task = task
        self._world_spec = world
        self._protocol = protocol
        self._setup = setup  # which thresholds score the answer (tasks.Task.threshold)
        self._units = world.unit_system
        self._trajectory = trajectory(world)
        self._window_end = world.duration_s / self._units.time_to_s
        self._rows: list[list[float]] = []
        self._full_table: pd.DataFrame | None = None
        # The protocol's N is read once, here: from now on the Budget holds the limit
        # (and the record states it in usage.budget).
        self._budget = (None if protocol.full else
                        self._add_budget(Budget("observations", protocol.budget)))
        self._submissions = self._add_budget(Budget("submissions", 1))
        if self._budget is not None:
            self._add_tool(ToolSpec("observe", self._observe_description(), {
                "type": "object",
                "properties": {"times": {
                    "type": "array", "items": {"type": "number"}, "minItems": 1,
                    "maxItems": PER_CALL_LIMIT,
                    "description": f"1 to {PER_CALL_LIMIT} times in {self._units.time}, each "
                                   f"in [0, {_fmt(self._window_end)}]."}},
                "required": ["times"], "additionalProperties": False}), self._observe)
        answer_schema = ({"type": "boolean"} if task.answer_type == "boolean" else
                         {"type": "number", "description": f"in SI units ({task.unit or 'dimensionless'})"})
        self._add_tool(ToolSpec(
            "submit", "Submit the final answer (SI units). One submission ends the episode.",
            {"type": "object", "properties": {"answer": answer_schema}, "required": ["answer"],
             "additionalProperties": False}), self._submit)

    # ---- what the agent reads ----------------------------------------------------------
    def _observe_description(self) -> str:
        assert self._budget is not None
        u = self._units
        return (f"Observe the positions of both stars at chosen times ({u.time}, inside the "
                f"window [0, {_fmt(self._window_end)}], any order, past times allowed). "
                f"1 to {PER_CALL_LIMIT} times per call; {self._budget.limit} observations "
                f"in total. Returns rows time, star1_x, star1_y, star1_z, star2_x, star2_y, "
                f"star2_z in {u.time} and {u.length}, also appended to `observations`.")

    @property
    def prompt(self) -> str:
        task, u = self._task, self._units
        unit = task.unit or "dimensionless"
        answer = ("true or false" if task.answer_type == "boolean"
                  else f"a number in SI units ({unit})")
        lines = [
            "You are studying a system of two stars, star1 and star2, moving in a plane "
            "(z = 0). You can only measure their positions.",
            "",
            f"Question: {task.question}",
            "",
            f"Data units: time in {u.time}, lengths in {u.length} (multiply by "
            f"{u.time_to_s:g} to get seconds and by {u.length_to_m:g} to get metres). "
            f"The observation window is [0, {_fmt(self._window_end)}] {u.time}.",
            f"Gravitational constant: G = {G_SI} m^3 kg^-1 s^-2 (SI).",
        ]
        if self._protocol.full:
            lines.append("Your Python workspace holds `df`, a pandas DataFrame with the columns "
                         f"{', '.join(COLUMNS)}: the positions of both stars on a regular time "
                         "grid spanning the whole window.")
        else:
            assert self._budget is not None
            lines.append(
                f"You have a budget of {self._budget.limit} observations. Use the `observe` "
                f"tool with 1 to {PER_CALL_LIMIT} times per call (inside the window, any order, "
                "past times allowed); each time costs one observation and a call that would "
                "exceed the budget is refused without charge. Every observed row is appended "
                f"to the DataFrame `observations` in your workspace (columns {', '.join(COLUMNS)}).")
        lines += [
            "The workspace also holds `task`, `units`, `window`, `G_SI`"
            + ("." if self._protocol.full else " and `budget`."),
            f"Answer with the `submit` tool: {answer}, always in SI whatever the data units. "
            "You may submit once; the submission ends the episode.",
        ]
        return "\n".join(lines)

    def _display_table(self) -> pd.DataFrame:
        if self._full_table is None:
            traj, u = self._trajectory, self._units
            n = len(traj.times_s)
            table = np.hstack([traj.times_s[:, None] / u.time_to_s,
                               traj.positions_m.reshape(n, 6) / u.length_to_m])
            self._full_table = pd.DataFrame(table, columns=COLUMNS)
        return self._full_table

    def workspace(self) -> dict[str, Any]:
        task = self._task
        space: dict[str, Any] = {
            "task": {"id": task.id, "answer_type": task.answer_type, "answer_unit": task.unit},
            "units": self._units.as_dict(),
            "window": [0.0, self._window_end],
            "G_SI": G_SI,
        }
        if self._protocol.full:
            space["df"] = self._display_table().copy()
        else:
            assert self._budget is not None
            space["observations"] = pd.DataFrame(
                [list(r) for r in self._rows], columns=COLUMNS, dtype=float)
            used, total = int(self._budget.spent), int(self._budget.limit or 0)
            space["budget"] = {"total": total, "per_call": PER_CALL_LIMIT,
                               "used": used, "remaining": total - used}
        return space

    def budget_left(self) -> float | None:
        """Observations left (None under full-obs, which has no budget)."""
        return None if self._budget is None else float(self._budget.remaining or 0)

    def _extend_record(self, record: EpisodeRecord) -> None:
        """`details["observed_times"]`: every observed time in display units, in call
        order (budget protocols only), so a report can show which moments the agent
        looked at. Times are the agent's own choices, never truth."""
        if not self._protocol.full:
            record.details["observed_times"] = [row[0] for row in self._rows]

    # ---- tools ------------------------------------------------------------------------
    def _observe(self, args: dict[str, Any]) -> ToolResult:
        assert self._budget is not None
        times = [float(t) for t in args["times"]]
        outside = [t for t in times if not 0.0 <= t <= self._window_end]
        if outside:
            raise ToolInputError(
                f"Times must lie inside the observation window [0, {_fmt(self._window_end)}] "
                f"{self._units.time}; got {', '.join(_fmt(t) for t in outside[:5])}. "
                "Nothing was charged.")
        self._budget.check(len(times))
        u = self._units
        seconds = np.clip(np.asarray(times) * u.time_to_s, 0.0, self._trajectory.duration_s)
        positions = self._trajectory.positions_at(seconds).reshape(len(times), 6) / u.length_to_m
        rows = [[t, *map(float, p)] for t, p in zip(times, positions, strict=True)]
        self._budget.charge(len(times))
        self._rows.extend(rows)
        remaining = int(self._budget.remaining or 0)
        header = "\t".join(COLUMNS)
        body = "\n".join("\t".join(_fmt(v) for v in row) for row in rows)
        text = (f"{header}\n{body}\n({len(rows)} rows appended to `observations`; "
                f"{remaining} observations remain.)")
        return ToolResult(text, data={"rows": rows, "remaining": remaining})

    def _submit(self, args: dict[str, Any]) -> ToolResult:
        self._submissions.charge(1)
        self._finish(args["answer"])
        return ToolResult("Answer recorded. The episode has ended.")

    # ---- scoring (hidden) -----------------------------------------------------------------
    def _truth(self) -> float | bool:
        return self._task.truth(self._world_spec)

    def _score(self, answer: Any) -> Score:
        return score_answer(answer, self._truth(), answer_type=self._task.answer_type,
                            threshold=self._task.threshold(self._protocol.name, self._setup))

    def _truth_for_record(self) -> Any:
        return self._truth()

    def _metric_name(self) -> str:
        return "exact_match" if self._task.answer_type == "boolean" else "relative_error"
