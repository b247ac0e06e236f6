"""Serve a suite's episodes as an OpenEnv environment (the `openenv` package, extra
`[openenv]`): `discoverygym serve openenv SUITE ...`.

Each WebSocket session on `/ws` gets its own `DiscoveryEnvironment` and so its own
episodes, one per `reset`; sessions run side by side. `reset(seed, task_id, options,
episode_id)` builds the episode from the registry (the server's options are
defaults; a client's `options` override those `client_options` allows) and returns the prompt and the tools in the
OpenAI function format. `step({"tool": name, "args": {...}})` calls one tool; the
observation holds its text, `is_error`, the budget left and, once the episode is over,
the record. The reward is 0 on every step but the last, which pays the episode's score
(as on the Gymnasium door). `state` shows the episode's public spec and progress.

OpenEnv's plain HTTP `/reset` and `/step` build a fresh environment per request and
close it after (the library's rule), so over HTTP a step has no episode: play over the
WebSocket. Whatever a client sends is read with the project's bounds before OpenEnv
parses it (`openenv_bounds`); a step refused there reaches the episode as a refused
call (an error that costs nothing, counted in `tool_errors`) and the session goes on.

Who chooses the episodes (`EpisodeDraws`): an evaluation server (the default) draws
every reset's seed from a key the client never sees, never plays one twice and refuses
a reset that names a seed, so no client can read a truth and replay its episode; with
`client_seeds` the client chooses (a training server) and every record says so. A
session that a socket holds is never closed for being idle (a model may think for
long). An evaluation server offers no session without a socket (OpenEnv's HTTP
`openenv/session/create`), so capacity belongs to live clients; a training server
offers one, and closes it `session_timeout_s` after it was made, whatever requests it
gets (no HTTP request plays an episode here)."""

from __future__ import annotations

import base64
import itertools
import json
import secrets
import threading
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import Any

from openenv.core.env_server import (
    Action,
    Environment,
    Observation,
    State,
)
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import Field

from ... import __version__
from ...core import Episode, EpisodeRecord, EpisodeSpec, ToolResult, get_suite
from ...core.bounded import UnsafeInput, check_value, clip, quote
from ...core.keys import Key, new_key
from ...run.records import RecordWriter
from ..shared.interpreter_tool import prompt_for_door
from .bounds import REFUSED, WS_MAX_BYTES, BoundedMessages

AGENT = "openenv"


class ResetRefused(ValueError):
    """A reset the server cannot honour (unknown task or option, a bad seed); the
    message says why. Over the WebSocket OpenEnv answers it as an error message, over
    HTTP `build_app` answers 400."""


class EpisodeDraws:
    """Who chooses the seed of each reset, shared by every session of a server.

    Evaluation (`client_seeds=False`): the server draws each seed from `key` (a fresh
    one by default), a start nonce and a counter, so a client can neither predict nor
    repeat an episode; a reset that names a seed is refused, and no (task, seed,
    options) is handed out twice. Training (`client_seeds=True`): the client's seed (0
    if none) is played as asked, and replays are allowed. Either way the record says
    which (`details.episode_draw`)."""

    def __init__(self, *, client_seeds: bool = False, key: Key | None = None) -> None:
        self.client_seeds = client_seeds
        self._key = None if client_seeds else (key or new_key())
        self._nonce = secrets.token_hex(8)  # a restart with the same key draws anew
        self._counter = itertools.count()
        self._handed_out: set[str] = set()
        self._lock = threading.Lock()

    @property
    def key(self) -> Key | None:
        return self._key

    @property
    def key_id(self) -> str | None:
        return None if self._key is None else self._key.id

    def seed(self, requested: Any, task_id: str, options: dict[str, Any]) -> int:
        """The seed of a reset that asked for `requested` (None: none)."""
        if self.client_seeds:
            seed = 0 if requested is None else requested
            if (isinstance(seed, bool) or not isinstance(seed, int)
                    or not 0 <= seed < 2**63):
                raise ResetRefused("seed must be an integer in [0, 2**63), got "
                                   f"{quote(seed, 80)}")
            return seed
        if requested is not None:
            raise ResetRefused("this is an evaluation server: it chooses every episode "
                               "and plays each once; reset without a seed (a server "
                               "started with --client-seeds lets a client choose, for "
                               "training)")
        with self._lock:
            while True:
                seed = self._key.derive("openenv", self._nonce, next(self._counter)) % 2**63
                played = json.dumps([task_id, seed, options], sort_keys=True, default=str)
                if played not in self._handed_out:
                    self._handed_out.add(played)
                    return seed

    def details(self) -> dict[str, Any]:
        """What a record says about how its episode was chosen."""
        if self.client_seeds:
            return {"mode": "training", "seed": "chosen by the client"}
        return {"mode": "evaluation", "seed": "drawn by the server", "key": self.key_id}


class DiscoveryAction(Action):
    """One tool call: the tool's name and its arguments (a JSON object)."""

    tool: str = Field(..., max_length=200, description="The tool's name, as listed in "
                      "the reset observation's `tools`.")
    args: dict[str, Any] = Field(default_factory=dict,
                                 description="The tool's arguments (its JSON schema).")


class DiscoveryObservation(Observation):
    """What a tool call (or reset) returned. `tools` is set on reset only, `record`
    once the episode is over."""

    text: str = Field(..., description="The tool's result; the task prompt after reset.")
    is_error: bool = Field(default=False, description="The call was refused; nothing "
                           "was charged.")
    budget_left: float | None = Field(default=None, description="What remains of the "
                                      "episode's budget (None: it has none).")
    tools: list[dict[str, Any]] | None = Field(default=None, description="The episode's "
                                               "tools in the OpenAI function format.")
    images: list[str] = Field(default_factory=list, description="PNG images of the "
                              "result, base64.")
    record: dict[str, Any] | None = Field(default=None, description="The episode's "
                                          "record, once it is over.")


class DiscoveryState(State):
    """The public side of a session's episode (never its hidden state)."""

    suite: str = ""
    task_id: str | None = None
    seed: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    done: bool = False
    budget_left: float | None = None


class DiscoveryEnvironment(Environment[DiscoveryAction, DiscoveryObservation,
                                       DiscoveryState]):
    """One session: a fresh episode per `reset`, played through `step`. Cheap to
    construct (OpenEnv builds one per HTTP request); the episode is built in reset."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, suite: str, task_id: str | None = None,
                 options: dict[str, Any] | None = None, max_steps: int = 500, *,
                 records: RecordSink | None = None, send_record: bool = True,
                 client_options: frozenset[str] | None = frozenset(),
                 draws: EpisodeDraws | None = None) -> None:
        super().__init__()
        self._suite = suite
        self._task_id = task_id
        self._options = dict(options or {})
        self._max_steps = int(max_steps)
        self._records = records
        self._send_record = send_record
        self._client_options = client_options
        # Built alone (a test, a script), the client chooses; a server passes its own.
        self._draws = draws or EpisodeDraws(client_seeds=True)
        self._episode: Episode | None = None
        self._state = DiscoveryState(suite=suite)
        self._lock = threading.Lock()

    # ---- reset -------------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None,
              task_id: str | None = None, options: dict[str, Any] | None = None,
              **unknown: Any) -> DiscoveryObservation:
        """Start a new episode; a bad request raises ResetRefused with a short reason
        (OpenEnv answers it as an error message and the session goes on)."""
        if unknown:
            raise ResetRefused(f"reset takes seed, task_id, options and episode_id; got "
                               f"{clip(', '.join(map(quote, unknown)), 200)}")
        spec = self._reset_spec(seed, task_id, options)
        if episode_id is not None and (not isinstance(episode_id, str)
                                       or len(episode_id) > 255):
            raise ResetRefused("episode_id must be text of at most 255 characters")
        try:
            episode = spec.build()
        except (KeyError, ValueError, TypeError) as exc:
            raise ResetRefused(clip(str(exc), 500)) from None
        except ImportError as exc:  # the suite's extra is not installed on this server
            raise ResetRefused(f"this server cannot build {spec.suite} episodes: "
                               f"{clip(str(exc), 200)}") from None
        with self._lock:
            self._end_unfinished("the client reset before the episode ended")
            self._episode = episode
            # An evaluation seed stays off the wire until the record: with it and the
            # package, a client could rebuild the episode and read its truth.
            self._state = DiscoveryState(
                episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                suite=spec.suite, task_id=spec.task_id,
                seed=spec.seed if self._draws.client_seeds else None,
                options=dict(spec.options), budget_left=episode.budget_left())
        return DiscoveryObservation(text=prompt_for_door(episode.prompt, interpreter=False),
                                    tools=episode.tools(),
                                    budget_left=episode.budget_left(), reward=None)

    def _reset_spec(self, seed: Any, task_id: Any, options: Any) -> EpisodeSpec:
        task = self._task_id if task_id is None else task_id
        if task is None:
            task = get_suite(self._suite).tasks()[0].id
        if not isinstance(task, str) or len(task) > 200:
            raise ResetRefused(f"task_id must be a task's name, got {quote(task, 80)}")
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise ResetRefused(f"options must be a JSON object, got {type(options).__name__}")
        try:
            check_value(options, what="options")
        except UnsafeInput as exc:
            raise ResetRefused(str(exc)) from None
        if self._client_options is not None and not set(options) <= self._client_options:
            allowed = ", ".join(sorted(self._client_options)) or "none"
            refused = ", ".join(map(quote, sorted(set(options) - self._client_options)))
            raise ResetRefused(f"this server does not let a client set {clip(refused, 200)}; "
                               f"options a client may set: {allowed}")
        merged = {**self._options, **options}
        # Evaluation: the draws are keyed too (core/keys), so even a seed that leaks with
        # the record cannot be replayed into the episode's truth without the key.
        return EpisodeSpec(self._suite, task, self._draws.seed(seed, task, merged), merged,
                           self._draws.key)

    # ---- step --------------------------------------------------------------------
    def step(self, action: DiscoveryAction, timeout_s: float | None = None,
             **kwargs: Any) -> DiscoveryObservation:
        """Call one tool of the current episode. Never raises: a bad call is an error
        observation that costs nothing, and the episode goes on."""
        with self._lock:
            episode = self._episode
            if episode is None:
                return DiscoveryObservation(
                    text="No episode: call reset first. Over plain HTTP each /reset and "
                         "/step gets a fresh environment; play an episode over the "
                         "WebSocket /ws.", is_error=True)
            if episode.done:
                return DiscoveryObservation(
                    text="The episode has ended; call reset for a new one.",
                    is_error=True, done=True, budget_left=episode.budget_left())
            self._state.step_count += 1
            refused = action.metadata.get(REFUSED)
            if refused is not None:
                result = episode.refuse(action.tool, str(refused))
            else:
                result = episode.call(action.tool, action.args)
            return self._observation(episode, result)

    def _observation(self, episode: Episode, result: ToolResult) -> DiscoveryObservation:
        error = None
        if not episode.done and self._state.step_count >= self._max_steps:
            episode.end()
            error = "step limit reached"
        self._state.done = episode.done
        self._state.budget_left = episode.budget_left()
        images = [base64.b64encode(png).decode("ascii") for png in result.images]
        if not episode.done:
            return DiscoveryObservation(text=result.text, is_error=result.is_error,
                                        budget_left=episode.budget_left(), images=images,
                                        reward=0.0)
        record = self._plain(episode.record(agent=AGENT, error=error))
        if self._records is not None:
            self._records.write(record)
        return DiscoveryObservation(text=result.text, is_error=result.is_error,
                                    budget_left=episode.budget_left(), images=images,
                                    done=True, reward=float(record["score"]),
                                    record=record if self._send_record else None)

    @property
    def state(self) -> DiscoveryState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        suite = get_suite(self._suite)
        return EnvironmentMetadata(
            name=f"discoverygym-{self._suite}", version=__version__,
            description=suite.description or f"discoverygym suite {self._suite}",
            author="discoverygym developers")

    def _end_unfinished(self, reason: str) -> None:
        """Score an episode left unfinished (a failure, with the reason), which also
        frees what it holds on the host. On an evaluation server it always goes to the
        records (a drawn episode counts once, played or not: no client skips the hard
        ones); on a training server once a tool was called in it (a reset alone, such as
        every plain HTTP /reset, played nothing)."""
        if self._episode is not None and not self._episode.done:
            self._episode.end()
            record = self._episode.record(agent=AGENT, error=reason)
            counts = not self._draws.client_seeds or self._state.step_count > 0
            if self._records is not None and counts:
                self._records.write(self._plain(record))

    def _plain(self, record: EpisodeRecord) -> dict[str, Any]:
        """The record as plain JSON values, saying how its episode was chosen."""
        plain = _plain(record)
        plain["details"] = {**plain.get("details", {}), "episode_draw": self._draws.details()}
        return plain

    def close(self) -> None:
        with self._lock:
            self._end_unfinished("the session closed before the episode ended")


def _plain(record: EpisodeRecord) -> dict[str, Any]:
    """The record as plain JSON values (a suite's details may hold numpy scalars, which
    the wire's serializer refuses)."""
    return json.loads(record.to_json())


class RecordSink:
    """The server's records file (JSONL, one line per finished episode, flushed), shared
    by every session. Never closed: sessions still closing as the server stops write
    their last records after any shutdown hook would have run."""

    def __init__(self, path: Path) -> None:
        self._writer = RecordWriter(path)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._writer.write(record)


#: Set while an ASGI WebSocket connection is handled: a session created in that context
#: is held by a socket (`SocketHeldSessions`).
_ON_SOCKET: ContextVar[bool] = ContextVar("discoverygym_on_socket", default=False)


class MarkSockets:
    """ASGI middleware: marks the handling of a WebSocket connection (`_ON_SOCKET`)."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        token = _ON_SOCKET.set(scope["type"] == "websocket")
        try:
            await self.app(scope, receive, send)
        finally:
            _ON_SOCKET.reset(token)


#: What an evaluation server answers to a session asked for without a socket.
NO_SOCKETLESS = ("this is an evaluation server: a session is held by a WebSocket (/ws) "
                 "and lasts as long as it; sessions without a socket are not offered")


def _socket_held_server(*, socketless: bool) -> type:
    from openenv.core.env_server.exceptions import EnvironmentFactoryError
    from openenv.core.env_server.http_server import HTTPEnvServer

    class SocketHeldSessions(HTTPEnvServer):
        """OpenEnv's server, with capacity kept for live clients:

        - A session created for a WebSocket is held by it, as OpenEnv holds a session a
          socket attaches to later. The idle reaper skips held sessions, so an episode
          whose socket is open is never ended for thinking, and never reaped while its
          socket plays on (which left more live environments than the capacity); the
          socket's end closes it.
        - A session without a socket (HTTP `openenv/session/create`) is not offered by
          an evaluation server (`socketless=False`): six such requests took all 4 slots
          with no socket, and a WebSocket client got CAPACITY_REACHED. Where it is
          offered (a training server) it expires `session_timeout` after it was made,
          whatever requests it gets: no HTTP request plays an episode of this
          environment (its MCP tools/list and tools/call fail: steps go over the
          WebSocket), so none counts as activity (a failing tools/list every 2 s kept
          a squatted session alive past a 6 s timeout)."""

        async def _create_session(self) -> tuple[str, Any]:
            on_socket = _ON_SOCKET.get()
            if not on_socket and not socketless:
                raise EnvironmentFactoryError("discoverygym", NO_SOCKETLESS)
            session_id, env = await super()._create_session()
            if on_socket:
                async with self._session_lock:
                    if session_id in self._sessions:
                        self._session_websocket_attachments.add(session_id)
            return session_id, env

        def _update_session_activity(self, session_id: str,
                                     increment_step: bool = False) -> None:
            # Only a socket plays here, and a socket-held session is never reaped: the
            # idle clock of a socketless session is never wound back by a request.
            if session_id in self._session_websocket_attachments:
                super()._update_session_activity(session_id, increment_step)

    return SocketHeldSessions


def build_app(suite: str, task_id: str | None = None, options: dict[str, Any] | None = None,
              *, max_sessions: int = 8, max_steps: int = 500,
              session_timeout_s: float | None = 60.0, records: Path | None = None,
              send_record: bool = True, client_options: frozenset[str] | None = frozenset(),
              client_seeds: bool = False, key: Key | None = None) -> Any:
    """The ASGI app serving `suite` (any registered suite, plugins included). `records`:
    a JSONL file every played episode's record is appended to; `send_record=False`
    keeps records off the wire (the last observation still pays the score);
    `client_options`: the episode options a reset may set (None: any; default none);
    `client_seeds`: a training server, where the client chooses seeds (default: the
    server draws them from `key`, a fresh one if None, and offers no session without a
    socket); `session_timeout_s`: seconds after which a session no socket holds (on a
    training server) is closed, from its creation."""
    from fastapi import FastAPI
    from openenv.core.env_server import ConcurrencyConfig

    get_suite(suite)  # an unknown suite fails here, not in every session
    sink = RecordSink(records) if records is not None else None
    draws = EpisodeDraws(client_seeds=client_seeds, key=key)
    factory = partial(DiscoveryEnvironment, suite, task_id, dict(options or {}), max_steps,
                      records=sink, send_record=send_record,
                      client_options=client_options, draws=draws)
    # What `openenv.core.env_server.create_fastapi_app` does, with our server class.
    app = FastAPI(title=f"discoverygym {suite} (OpenEnv)", version=__version__)
    # Sessions without a socket are offered by a training server only (see
    # SocketHeldSessions).
    server = _socket_held_server(socketless=client_seeds)(
        factory, DiscoveryAction, DiscoveryObservation, env_name=f"discoverygym-{suite}",
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions,
                                             session_timeout=session_timeout_s),
        state_cls=DiscoveryState)
    server.register_routes(app, mode="simulation")
    app.add_middleware(BoundedMessages, action_cls=DiscoveryAction)
    app.add_middleware(MarkSockets)

    async def refused(request: Any, exc: Exception) -> Any:
        from fastapi.responses import JSONResponse

        return JSONResponse({"detail": clip(str(exc), 400)}, status_code=400)
    app.add_exception_handler(ResetRefused, refused)
    app.state.episode_draws = draws
    return app


def serve(app: Any, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Run `app` with uvicorn on host:port (0 picks a free port); `ready` gets the base
    URL once the socket is bound."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    config = uvicorn.Config(app, ws_max_size=WS_MAX_BYTES, log_level="warning")
    sock.listen(config.backlog)  # clients that come before uvicorn starts wait, not fail
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    ready(f"http://{shown}:{sock.getsockname()[1]}")
    uvicorn.Server(config).run(sockets=[sock])
