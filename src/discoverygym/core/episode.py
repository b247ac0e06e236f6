"""The Episode: the one object every agent and front-end talks to.

A suite subclasses `Episode`, registers its tools with `_add_tool`, implements
`prompt`, `workspace` and `_score`, and calls `_finish(answer)` from its submit
tool. Everything an agent may touch goes through `view()`."""

from __future__ import annotations

import copy
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from .. import __version__
from .bounded import UnsafeInput, check_value, clip, quote
from .budget import USAGE_TOTALS, Budget
from .errors import ToolInputError
from .record import EpisodeRecord, Score, Usage
from .tools import ToolResult, ToolSpec, validate_arguments

Handler = Callable[[dict[str, Any]], ToolResult]

_MISSING = object()


class Episode(ABC):
    """One attempt at one task. Hidden state lives in private attributes; agents get
    an `EpisodeView`."""

    def __init__(
        self,
        *,
        suite: str,
        task_id: str,
        seed: int = 0,
        options: dict[str, Any] | None = None,
        world: str | None = None,
        protocol: str | None = None,
    ) -> None:
        self.suite = suite
        self.task_id = task_id
        self.seed = int(seed)
        self.options = dict(options or {})
        self.world = world
        self.protocol = protocol
        self.key_id: str | None = None  # set by EpisodeSpec.build when the draws are keyed
        self._usage = Usage()
        self._budgets: list[Budget] = []  # the counters of what the episode spends
        self._tool_table: dict[str, tuple[ToolSpec, Handler]] = {}
        self._answer: Any = _MISSING
        self._done = False
        self._started = time.perf_counter()
        self._internal_errors: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._final: tuple[Score, Any] | None = None  # (score, answer), fixed at first record

    # ---- what the episode spends ---------------------------------------------------
    def _add_budget(self, budget: Budget) -> Budget:
        """Count a quantity with `budget` (its only counter: never add to
        `usage.<kind>` as well). The record lists the budgets in the order added.
        Returns it, to charge."""
        if any(b.kind == budget.kind for b in self._budgets):
            raise ValueError(f"the episode already counts {budget.kind}")
        self._budgets.append(budget)
        return budget

    @property
    def usage(self) -> Usage:
        """What the episode has spent: the calls counted here, and the totals and
        `budget` list read from its budgets (a budget is the one counter of its
        quantity, so the totals are never counted twice)."""
        usage = self._usage
        for budget in self._budgets:
            if budget.kind in USAGE_TOTALS:
                setattr(usage, budget.kind, budget.spent)
        usage.budget = [budget.as_record() for budget in self._budgets]
        return usage

    # ---- what subclasses provide -------------------------------------------------
    @property
    @abstractmethod
    def prompt(self) -> str:
        """The complete instructions an agent needs. No hidden value in it."""

    @abstractmethod
    def workspace(self) -> dict[str, Any]:
        """Variables the agent's interpreter starts with (fresh copies)."""

    @abstractmethod
    def _score(self, answer: Any) -> Score:
        """Score a submitted answer against the hidden truth."""

    def budget_left(self) -> float | None:
        """What remains of the episode's main budget (observations, cost units,
        submissions, solve time), or None if it has none. Suites with a budget override
        this."""
        return None

    def sandbox_dirs(self) -> dict[str, list[str]]:
        """Host directories the agent's interpreter must see at the same path:
        {"ro": [...], "rw": [...]} (e.g. a task's data and output folders). Default:
        none."""
        return {}

    def sandbox_python(self) -> str | None:
        """The interpreter the agent's sandboxed `python` tool runs (e.g. a task's own
        environment), or None for the project's own. Default: None."""
        return None

    def grader_prompt(self) -> str | None:
        """Text for an optional grader model once the episode has ended (e.g. a holistic
        grade of a written solution), or None when there is nothing to grade. A grade
        is a second column in the record, never the score."""
        return None

    def record_grade(self, reply: str, grader: str) -> None:
        """Keep a grader model's reply to `grader_prompt`; suites with a grader parse
        it into their record details. The default ignores it."""
        return None

    def _truth_for_record(self) -> Any:
        """The truth to store in the record when there is no answer to score."""
        return None

    # ---- the contract ------------------------------------------------------------
    def _add_tool(self, spec: ToolSpec, handler: Handler) -> None:
        self._tool_table[spec.name] = (spec, handler)

    def _remove_tool(self, name: str) -> None:
        self._tool_table.pop(name, None)

    def tool_specs(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._tool_table.values()]

    def tools(self) -> list[dict[str, Any]]:
        """Tool specs in the OpenAI function format. `submit` is always among them."""
        return [spec.openai() for spec in self.tool_specs()]

    @property
    def done(self) -> bool:
        return self._done

    def call(self, name: str, args: Any = None) -> ToolResult:
        """Run a tool. Never raises: bad input gives an `is_error` result that costs
        nothing, and the episode stays usable."""
        self.usage.tool_calls += 1
        result = self._dispatch(name, args)
        if result.is_error:
            self.usage.tool_errors += 1
        self._events.append({"tool": name, "error": result.is_error})
        return result

    def refuse(self, name: str, reason: str) -> ToolResult:
        """Count a call that a door refused before it could be decoded (a message too
        large or too deep to read): an error that costs nothing, like any bad input."""
        self.usage.tool_calls += 1
        self.usage.tool_errors += 1
        self._events.append({"tool": clip(str(name), 80), "error": True})
        return ToolResult(f"Invalid input to {quote(name, 80)}: {clip(reason, 300)}. Nothing "
                          "was charged.", is_error=True)

    def _dispatch(self, name: str, args: Any) -> ToolResult:
        if self._done:
            return ToolResult("The episode has ended; no further tool calls are accepted.",
                              is_error=True)
        if not isinstance(name, str) or name not in self._tool_table:
            known = ", ".join(sorted(self._tool_table))
            return ToolResult(f"Unknown tool {quote(name, 80)}. Available tools: {known}. "
                              "Nothing was charged.", is_error=True)
        spec, handler = self._tool_table[name]
        try:
            checked = validate_arguments(spec, args)
            return handler(checked)
        except ToolInputError as exc:
            return ToolResult(str(exc), is_error=True)
        except Exception as exc:  # a bug of ours must not end the agent's episode
            self._internal_errors.append(traceback.format_exc(limit=5))
            return ToolResult(
                f"Internal error in tool '{name}' ({type(exc).__name__}). Nothing was "
                "charged; the episode continues.",
                is_error=True,
            )

    def _finish(self, answer: Any) -> None:
        """Record the final answer and end the episode."""
        self._answer = answer
        self._done = True

    def end(self) -> None:
        """End the episode without an answer (the agent gave up or ran out of limits)."""
        self._done = True

    @property
    def answered(self) -> bool:
        return self._answer is not _MISSING

    # ---- the record: hooks for suites, one public method that never raises ----------
    def _before_record(self) -> None:
        """Settle the answer before scoring (e.g. take the best submission, evaluate the
        outputs left behind). Runs once, at the first `record()`."""
        return None

    def _extend_record(self, record: EpisodeRecord) -> None:
        """Add suite details to a finished record (runs on every `record()`)."""
        return None

    def _release(self) -> None:
        """Free what the episode holds on the host (temporary folders, logs). Runs once,
        after the first record, whatever happened."""
        return None

    def record(self, *, agent: str | None = None, model: str | None = None,
               error: str | None = None) -> EpisodeRecord:
        """Score the episode and return its record. A missing answer scores as a failure
        with the reason in `error`. Never raises: any failure inside scoring (a bug, an
        answer that breaks the scorer) becomes a failed record that names the cause.
        The score is fixed at the first call; later calls return the same verdict."""
        first = self._final is None
        try:
            if first:
                self.usage.wall_s = time.perf_counter() - self._started
                self._before_record()
                self._final = self._score_final(error)
            score, answer = self._final
            record = self._build_record(score, answer, agent, model, error)
            self._extend_record(record)
            record.to_json()  # a record that cannot be written is no record
            return record
        except Exception as exc:  # noqa: BLE001 - turned into a failed record
            return self._failed_record(exc, agent, model, error)
        finally:
            if first:
                try:
                    self._release()
                except Exception:  # noqa: BLE001 - cleaning up must not lose the record
                    self._internal_errors.append(traceback.format_exc(limit=5))

    def _score_final(self, error: str | None) -> tuple[Score, Any]:
        if self._answer is _MISSING:
            score = Score(passed=False, score=0.0, metric=self._metric_name(),
                          truth=self._truth_for_record(),
                          error=error or "no answer submitted")
            return score, None
        score = self._score(self._answer)
        if error and not score.error:
            score.error = error
        return score, self._answer

    def _build_record(self, score: Score, answer: Any, agent: str | None, model: str | None,
                      error: str | None) -> EpisodeRecord:
        details = dict(score.details)
        if self._internal_errors:
            details["internal_errors"] = list(self._internal_errors)
        return EpisodeRecord(
            suite=self.suite, task_id=self.task_id, seed=self.seed, options=dict(self.options),
            agent=agent, model=model, answer=answer, truth=score.truth, passed=bool(score.passed),
            score=float(score.score), metric=score.metric, value=score.value,
            threshold=score.threshold, error=score.error, usage=copy.copy(self.usage),
            world=self.world, protocol=self.protocol, key_id=self.key_id, details=details,
            version=__version__,
        )

    def _failed_record(self, exc: Exception, agent: str | None, model: str | None,
                       error: str | None) -> EpisodeRecord:
        """The record of an episode whose scoring failed: passed False, score 0, the
        cause in `error` and the traceback in `details`."""
        self._internal_errors.append(traceback.format_exc(limit=8))
        answer = None if self._answer is _MISSING else self._answer
        try:
            check_value(answer, what="the answer")
        except UnsafeInput:
            answer = quote(answer)
        reason = f"internal error while scoring ({type(exc).__name__}: {clip(str(exc), 300)})"
        return EpisodeRecord(
            suite=self.suite, task_id=self.task_id, seed=self.seed, options=dict(self.options),
            agent=agent, model=model, answer=answer, truth=None, passed=False, score=0.0,
            metric=self._metric_name(), value=None, threshold=None,
            error=f"{error}; {reason}" if error else reason, usage=copy.copy(self.usage),
            world=self.world, protocol=self.protocol, key_id=self.key_id,
            details={"internal_errors": list(self._internal_errors)}, version=__version__,
        )

    def _metric_name(self) -> str:
        return "score"

    def replay_score(self, answer: Any) -> Score:
        """Score a recorded answer against this episode's truth, as its submit would
        (for `discoverygym verify`: a rebuilt episode re-scores a record). Touches no
        budget; use it on an episode built for this only."""
        self._answer = answer  # some suites score the stored answer (tpbench verifies it)
        return self._score(answer)

    def replay_truth(self) -> Any:
        """The truth a record of this episode holds when nothing was submitted."""
        return self._truth_for_record()

    def writes_files(self) -> bool:
        """Whether the agent may leave files that the score reads (a writable folder):
        such a score cannot be replayed from a record alone."""
        return bool(self.sandbox_dirs().get("rw"))

    def view(self) -> EpisodeView:
        return EpisodeView(self)


class EpisodeView:
    """What an agent holds: the prompt, the tools, `call`, `workspace()` and `done`.

    The view keeps no reference to the episode in any attribute; it holds closures
    only, so walking its attributes never reaches hidden state. (Python introspection
    of closures can; the hard boundary for untrusted code is the sandbox process.)"""

    __slots__ = ("_fns", "prompt")

    def __init__(self, episode: Episode) -> None:
        fns = (
            lambda: episode.tools(),
            lambda name, args=None: episode.call(name, args),
            lambda: episode.workspace(),
            lambda: episode.done,
        )
        object.__setattr__(self, "_fns", fns)
        object.__setattr__(self, "prompt", episode.prompt)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("EpisodeView is read-only")

    def tools(self) -> list[dict[str, Any]]:
        """Tool specs in the OpenAI function format."""
        return self._fns[0]()

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools()]

    def call(self, name: str, args: dict[str, Any] | None = None) -> ToolResult:
        """Call a tool; see `Episode.call`."""
        return self._fns[1](name, args)

    def workspace(self) -> dict[str, Any]:
        """The variables an interpreter would hold now (copies)."""
        return self._fns[2]()

    @property
    def done(self) -> bool:
        return self._fns[3]()
