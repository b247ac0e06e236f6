"""The tool server of one rollout: a `vf.Toolset` (an MCP server in its own process)
that builds the rollout's episode from its TaskData and serves the episode's tools and
the sandboxed `python` tool. The live episode is only in this process and the model
reaches it only through these tools; the record (truth included) leaves through the
rollout state once the episode is over (or the server is stopped), never in a tool
result."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from typing import Any

import verifiers.v1 as vf

from ... import __version__
from ...core import Episode, EpisodeRecord, EpisodeSpec, ToolResult, Usage, get_suite
from ...core.bounded import clip
from ...core.keys import BadKey, Key, key_from_environment
from ..shared.call_log import CallLog
from ..shared.interpreter_tool import PYTHON_TOOL, InterpreterTool
from ..shared.mcp_content import mcp_content
from .calls import CallLedger
from .state import EpisodeState

AGENT = "verifiers"
#: The error of a record whose rollout ended before the episode did.
NO_ANSWER = "the rollout ended without an answer"


def task_key(key_id: str | None) -> Key | None:
    """The key a keyed task (the eval split) was drawn with, from this process's
    environment (DISCOVERYGYM_KEY_FILE / DISCOVERYGYM_KEY), checked against its id."""
    if key_id is None:
        return None
    key = key_from_environment()
    if key is None or key.id != key_id:
        raise BadKey(f"the task was drawn with key {key_id}; this tool server has "
                     f"{key.id if key else 'none'} (DISCOVERYGYM_KEY_FILE)")
    return key


class EpisodeToolsetConfig(vf.ToolsetConfig):
    interpreter: bool = True
    """Offer the sandboxed `python` tool beside the episode's own tools."""


class EpisodeToolset(vf.Toolset[EpisodeToolsetConfig, EpisodeState]):
    # The model sees the episode's tool names as its prompt spells them (`observe`,
    # `submit`), not `<server>_observe`.
    TOOL_PREFIX = None

    def __init__(self, config: EpisodeToolsetConfig) -> None:
        super().__init__(config)
        self.episode: Episode | None = None
        self.python: InterpreterTool | None = None
        self.ledger = CallLedger()
        #: every call, python included, for the record's details (as on every door)
        self.calls = CallLog()
        self._refusals_seen: set[str] = set()
        self._recorded = False
        self._lock = asyncio.Lock()
        #: Why the episode could not be built, if it could not.
        self.broken: str | None = None
        self._spec: EpisodeSpec | None = None

    async def setup_task(self, task: Any) -> None:
        """Build the rollout's episode. If that fails the server still starts and
        answers the harness's first request (listing the tools) with the cause, so the
        rollout fails in seconds and says why: a server that died here left verifiers
        polling its port for three minutes."""
        # The public spec names the episode in a record written before it is built.
        self._spec = EpisodeSpec(task.suite, task.task_id, task.seed, dict(task.options))
        try:
            spec = self._spec.with_key(task_key(getattr(task, "key_id", None)))
            self.episode = await asyncio.to_thread(spec.build)
        except Exception as exc:  # noqa: BLE001 - any cause is reported, none kills the server
            self.broken = clip(f"{type(exc).__name__}: {exc}", 400)
            with contextlib.suppress(Exception):  # the record is a courtesy; serving is not
                await self._push_final(f"the episode's tool server could not start: "
                                       f"{self.broken}")
            return
        if self.config.interpreter:
            limits = get_suite(spec.suite).python_limits
            self.python = InterpreterTool(self.episode, self.calls,
                                          time_limit_s=limits.time_limit_s,
                                          cpu_s=limits.cpu_s, memory_mb=limits.memory_mb)
        self._exit_stack.push_async_callback(self._finish)

    @classmethod
    def run(cls) -> None:
        """The server process's entry point. uvicorn re-raises the SIGTERM that stopped
        it once it has shut down; with the default handler that would kill the process
        before `_finish` leaves the record."""
        signal.signal(signal.SIGTERM, lambda *_: None)
        super().run()

    def register(self, mcp: Any) -> None:
        # The episode's tools have JSON schemas of their own: serve them as they are
        # instead of deriving schemas from Python signatures (as NeMoGymToolset does).
        mcp.list_tools = self._with_state(self.list_tools)
        mcp.call_tool = self._with_state(self.call_tool)

    def tool_specs(self) -> list[Any]:
        specs = list(self.episode.tool_specs()) if self.episode is not None else []
        return specs + ([PYTHON_TOOL] if self.python is not None else [])

    async def list_tools(self) -> list[Any]:
        import mcp.types as types

        if self.broken is not None:
            raise RuntimeError(f"the episode's tool server could not start: {self.broken}")
        specs = self.tool_specs()
        self.state.tools = [s.name for s in specs]
        return [types.Tool(name=s.name, description=s.description,
                           input_schema=dict(s.parameters)) for s in specs]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        import mcp.types as types

        async with self._lock:  # a retry may arrive while its first attempt still runs
            result = await self.answer(name, arguments, self.state)
        return types.CallToolResult(content=mcp_content(result), is_error=result.is_error)

    async def answer(self, name: str, arguments: Any, state: EpisodeState) -> ToolResult:
        """Run one request against the episode, charging each call id once."""
        if self.episode is None:
            return ToolResult("The episode is not ready.", is_error=True)
        self._count_refusals(state)
        call_id = self.ledger.identify(name, arguments, state.calls)
        if call_id in self.ledger.answers:
            return self.ledger.answers[call_id]
        if self.python is not None and name == PYTHON_TOOL.name:
            code = arguments.get("code") if isinstance(arguments, dict) else None
            result = await asyncio.to_thread(self.python.run, code)
        else:
            started = time.perf_counter()
            result = await asyncio.to_thread(self.episode.call, name, arguments)
            if self.python is not None and not result.is_error:
                await asyncio.to_thread(self.python.refresh)
            self.calls.note(name, arguments, result.text, result.is_error,
                            duration_s=round(time.perf_counter() - started, 4))
        if self.episode.done:
            self._write_record(state, None)
            result = ToolResult(result.text + "\n\nThe episode has ended.",
                                is_error=result.is_error, images=result.images)
        self.ledger.answer(call_id, name, arguments, result)
        return result

    def _count_refusals(self, state: EpisodeState) -> None:
        """Calls the Task refused before they ran count as the episode's tool errors,
        as on every other door (`Episode.refuse`)."""
        for refusal in state.refused:
            if refusal.key not in self._refusals_seen and self.episode is not None:
                self._refusals_seen.add(refusal.key)
                self.episode.refuse(refusal.name, refusal.reason)

    def _write_record(self, state: EpisodeState, error: str | None) -> None:
        if self._recorded or self._spec is None:
            return
        self._recorded = True
        state.done = True
        if self.episode is not None:
            record = self.episode.record(agent=AGENT, error=error)
            if self.python is not None:
                self.python.record_calls(record.details)
            else:
                self.calls.write(record.details, None)
            state.record_json = record.to_json()
        else:  # the episode could not be built
            state.record_json = unbuilt_record(self._spec, error).to_json()

    async def _finish(self) -> None:
        """At shutdown: an episode that ended without an answer still leaves its record
        (a failed one, with the reason), pushed to the rollout state."""
        try:
            if not self._recorded and self.episode is not None:
                await self._push_final(NO_ANSWER)
        finally:
            if self.python is not None:
                await asyncio.to_thread(self.python.close)

    async def _push_final(self, error: str) -> None:
        """Leave the failed record (`error` says why) in the rollout state."""
        import httpx

        url, secret, route = self._state_channel()
        if not url:
            self._write_record(EpisodeState(), error)
            return
        headers = {"Authorization": f"Bearer {secret}"}
        if route:
            headers["X-Verifiers-State-Route"] = route
        # The SDK's client is closed by now; one short-lived client of our own.
        async with httpx.AsyncClient(timeout=10) as client:
            pulled = await client.get(url, headers=headers)
            state = self._state_adapter.validate_json(pulled.content)
            self._count_refusals(state)
            self._write_record(state, error)
            await client.put(url, content=self._state_adapter.dump_json(state),
                             headers={**headers, "Content-Type": "application/json"})


def unbuilt_record(spec: EpisodeSpec, error: str | None) -> EpisodeRecord:
    """The failed record of an episode that was never built (or whose tool server left
    none): nothing answered, nothing spent."""
    return EpisodeRecord(
        suite=spec.suite, task_id=spec.task_id, seed=spec.seed, options=dict(spec.options),
        agent=AGENT, model=None, answer=None, truth=None, passed=False, score=0.0,
        metric="", value=None, threshold=None, error=error, usage=Usage(),
        world=spec.options.get("world"), protocol=spec.options.get("protocol"),
        version=__version__)


if __name__ == "__main__":
    EpisodeToolset.run()
