"""A stateful sandboxed Python interpreter: one long-lived process per episode."""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import secrets
import select
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from ..core.bounded import Bounds, UnsafeInput, loads
from .config import ExecResult, SandboxConfig
from .isolation import (
    Layout,
    python_executable,
    resolve_level,
    sandbox_command,
    spawn,
    terminate,
    weak_warning,
)
from .supervise import ProcessGroup

_BOOT_SOURCE = (Path(__file__).with_name("_bootstrap.py")).read_text()
STARTUP_TIMEOUT_S = 120.0
CONTROL_TIMEOUT_S = 60.0
#: How often a running call's whole sandbox is measured against the aggregate limits.
WATCH_INTERVAL_S = 0.1
_REPLY_BOUNDS = Bounds(max_depth=8, max_items=1000)
#: How much of the sandbox process's own stdout/stderr the host keeps (the tail).
LOG_TAIL_BYTES = 64 * 1024


class SandboxError(RuntimeError):
    """The sandboxed interpreter could not be started or talked to."""


class _Timeout(Exception):
    pass


class _Died(Exception):
    pass


class _OverLimit(Exception):
    """The sandbox as a whole went over its memory or process limit."""


def _pipe_above_args_fd() -> tuple[int, int]:
    """`os.pipe()` with both ends at descriptor 10 or above. The bubblewrap launch hands
    bwrap its options on descriptor 9 (`9<file`), which replaced a protocol pipe that
    landed there: in a process with a few more descriptors open (an event loop's), the
    interpreter died at start."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(fd)
    return ends[0], ends[1]


class _LogTail:
    """Drains the sandbox's own stdout/stderr pipe in a daemon thread, keeping the last
    LOG_TAIL_BYTES: whatever the sandbox writes there costs the host no disk and
    bounded memory. The thread ends when the last writer is gone."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="sandbox-log", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self._fd, 1 << 16):
                with self._lock:
                    self._tail += chunk
                    del self._tail[:-LOG_TAIL_BYTES]
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def tail(self, n: int) -> str:
        self._thread.join(timeout=0.5)  # a dead process's last words may be in flight
        with self._lock:
            return bytes(self._tail[-n:]).decode("utf-8", "replace")


class Interpreter:
    """A Python interpreter in a sandboxed process, holding state between executions.

    `workspace` (name -> value) is sent in at start and after every restart; values
    travel host -> sandbox by pickle (the host is trusted). Results travel back as JSON
    text only; nothing from the sandbox is ever unpickled.

    Use as a context manager, or call `close()`."""

    def __init__(self, workspace: dict[str, Any] | None = None,
                 config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.isolation = resolve_level(self.config)
        self.isolation_warning = weak_warning(self.isolation)
        self.events: list[dict[str, Any]] = []
        self.restarts = 0
        self.executions = 0
        self.startup_s = 0.0
        self._workspace: dict[str, Any] = dict(workspace or {})
        self._lock = threading.RLock()
        self._proc: subprocess.Popen | None = None
        self._layout: Layout | None = None
        self._cmd_w = self._reply_r = -1
        self._buffer = b""
        self._closed = False
        self._group: ProcessGroup | None = None
        self._start()

    # ---- lifecycle ---------------------------------------------------------------
    def _start(self) -> None:
        started = time.perf_counter()
        config = self.config
        self._layout = Layout.create(self.isolation, config)
        cmd_r, self._cmd_w = _pipe_above_args_fd()
        self._reply_r, reply_w = _pipe_above_args_fd()
        settings = {"cmd_fd": cmd_r, "reply_fd": reply_w,
                    "output_limit_chars": int(config.output_limit_chars),
                    "preload": dict(config.preload)}
        argv = [python_executable(config), "-I", "-c", _BOOT_SOURCE, json.dumps(settings)]
        cmd, _, env = sandbox_command(self.isolation, config, self._layout, argv)
        self._group = ProcessGroup(self._layout.uid, memory_bytes=self._total_memory(),
                                   max_processes=int(config.max_processes))
        cmd = self._group.wrap(cmd)
        # The process's own stdout and stderr (start-up errors; what agent code writes on
        # the descriptors its cells saved) go into a pipe the host drains with a bound:
        # never a host file the sandbox could write without limit.
        log_r, log_w = _pipe_above_args_fd()
        try:
            self._proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w,
                               env=env, cwd=self._layout.root,
                               pass_fds=(cmd_r, reply_w), start_new_session=True)
        finally:
            os.close(log_w)
            os.close(cmd_r)
            os.close(reply_w)
        self._log = _LogTail(log_r)
        self._buffer = b""
        try:
            hello = self._recv(STARTUP_TIMEOUT_S)
        except (_Timeout, _Died) as exc:
            detail = self._log_tail()
            self._stop()
            raise SandboxError(f"the sandboxed interpreter did not start ({type(exc).__name__}); "
                               f"its output:\n{detail}") from None
        self.sandbox_uid = hello.get("uid")
        if self._workspace:
            self._send_workspace(self._workspace)
        # What runs now is the sandbox's machinery; whatever agent code starts later is
        # stopped when its call returns.
        self._group.settle(self._proc.pid, hello.get("pid"))
        self._group.freeze()
        self.startup_s = time.perf_counter() - started

    def _total_memory(self) -> int:
        return int(self.config.total_memory_mb or self.config.memory_mb) * 1024 * 1024

    def _stop(self) -> None:
        if getattr(self, "_group", None) is not None:
            self._group.close()
            self._group = None
        if self._proc is not None and self._layout is not None:
            terminate(self._proc, self._layout)
        for fd in (self._cmd_w, self._reply_r):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._cmd_w = self._reply_r = -1
        if self._layout is not None:
            self._layout.cleanup()
        self._proc = None
        self._layout = None

    def _restart(self, event: str, reason: str) -> None:
        self.events.append({"event": event, "reason": reason, "execution": self.executions})
        self.restarts += 1
        self._stop()
        self._start()

    def close(self) -> None:
        """Stop the process and delete its private directory."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._stop()

    def __enter__(self) -> Interpreter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; close() is the real way
        try:
            self.close()
        except Exception:
            pass

    # ---- protocol ----------------------------------------------------------------
    def _send(self, payload: bytes) -> None:
        data = struct.pack(">I", len(payload)) + payload
        try:
            while data:
                data = data[os.write(self._cmd_w, data):]
        except OSError as exc:  # broken pipe: the process is gone
            raise _Died(str(exc)) from None

    def _max_reply_bytes(self) -> int:
        return 16 * int(self.config.output_limit_chars) + 1_000_000

    def _recv(self, timeout_s: float, expect_id: str | None = None,
              watch: bool = False) -> dict[str, Any]:
        """The next reply frame (for an exec: the one carrying `expect_id`; frames left
        over from an earlier call, or written by agent code onto the channel, are
        dropped). With `watch`, the whole sandbox is measured every WATCH_INTERVAL_S
        against the aggregate memory and process limits."""
        deadline = time.monotonic() + timeout_s
        next_watch = time.monotonic() + WATCH_INTERVAL_S
        while True:
            while len(self._buffer) >= 4:
                (n,) = struct.unpack(">I", self._buffer[:4])
                if n > self._max_reply_bytes():
                    raise _Died("reply larger than allowed")
                if len(self._buffer) < 4 + n:
                    break
                frame, self._buffer = self._buffer[4:4 + n], self._buffer[4 + n:]
                try:
                    reply = loads(frame, _REPLY_BOUNDS)
                except UnsafeInput:
                    raise _Died("malformed reply") from None
                if not isinstance(reply, dict):
                    raise _Died("malformed reply")
                if expect_id is not None and reply.get("id") != expect_id:
                    continue  # stale or forged
                return reply
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                raise _Timeout
            if watch and now >= next_watch:
                self._check_limits()
                next_watch = now + WATCH_INTERVAL_S
            wait = min(left, next_watch - now) if watch else left
            ready, _, _ = select.select([self._reply_r], [], [], max(wait, 0.0))
            if not ready:
                continue
            chunk = os.read(self._reply_r, 1 << 20)
            if not chunk:
                raise _Died("the process ended")
            self._buffer += chunk

    def _check_limits(self) -> None:
        if self._group is None:
            return
        processes, memory = self._group.usage()
        if memory > self._total_memory():
            raise _OverLimit(f"the sandbox's processes together used {memory >> 20} MiB, "
                             f"over its {self._total_memory() >> 20} MiB limit")
        if processes > int(self.config.max_processes):
            raise _OverLimit(f"the sandbox ran {processes} processes, over its limit of "
                             f"{self.config.max_processes}")

    def _send_workspace(self, variables: dict[str, Any]) -> None:
        frozen = self._group is not None and self._group.frozen
        if frozen:
            self._group.thaw()
        try:
            self._send_workspace_thawed(variables)
        finally:
            if frozen:
                self._group.freeze()

    def _send_workspace_thawed(self, variables: dict[str, Any]) -> None:
        self._send(json.dumps({"op": "workspace"}).encode())
        self._send(pickle.dumps(dict(variables), protocol=pickle.HIGHEST_PROTOCOL))
        reply = self._recv(CONTROL_TIMEOUT_S)
        if not reply.get("ok"):
            raise SandboxError(f"workspace could not be loaded: {reply.get('error')}")

    def _death_reason(self) -> str:
        proc = self._proc
        if proc is None:
            return "it was not running"
        try:
            rc = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        sig = -rc if rc < 0 else rc - 128 if rc > 128 else 0
        if sig == signal.SIGXCPU:
            return f"it used up its CPU-time limit of {self.config.cpu_s} s"
        if sig == signal.SIGKILL:
            return "it was killed, most likely for exceeding the memory or process limit"
        if sig:
            return f"it was killed by signal {signal.Signals(sig).name}"
        return f"it exited with status {rc}"

    # ---- public API --------------------------------------------------------------
    @property
    def workspace_names(self) -> list[str]:
        return sorted(self._workspace)

    def execute(self, code: str) -> ExecResult:
        """Run `code` in the interpreter's namespace. The value of a bare last expression
        comes back as its repr. On timeout or a crash the interpreter is restarted with
        the workspace restored and `notice` says so."""
        with self._lock:
            if self._closed:
                raise SandboxError("the interpreter is closed")
            self.executions += 1
            started = time.perf_counter()
            limit_s = float(self.config.time_limit_s)
            restored = ("The workspace variables were restored; variables you defined "
                        "yourself were lost.")
            call_id = secrets.token_hex(8)
            try:
                if self._proc is None:
                    self._start()
                if self._group is not None:
                    self._group.thaw()
                self._send(json.dumps({"op": "exec", "code": str(code), "id": call_id}).encode())
                reply = self._recv(limit_s, expect_id=call_id, watch=True)
            except _OverLimit as exc:
                self._restart("limit", str(exc))
                return ExecResult(
                    restarted=True, duration_s=time.perf_counter() - started,
                    error=f"MemoryError: {exc}.",
                    notice=f"The interpreter was stopped ({exc}) and restarted. {restored}")
            except _Timeout:
                self._restart("timeout", f"execution exceeded {limit_s:g} s")
                return ExecResult(
                    timed_out=True, restarted=True, duration_s=time.perf_counter() - started,
                    error=f"TimeoutError: execution exceeded the {limit_s:g} s time limit.",
                    notice=(f"Your code ran longer than the {limit_s:g} s limit, so the "
                            f"interpreter was stopped and restarted. {restored}"))
            except _Died:
                reason = self._death_reason()
                self._restart("died", reason)
                return ExecResult(
                    restarted=True, duration_s=time.perf_counter() - started,
                    error=f"The interpreter process stopped: {reason}.",
                    notice=f"The interpreter stopped ({reason}) and was restarted. {restored}")
            stopped = self._group.quiet() if self._group is not None else 0
            limit = int(self.config.output_limit_chars)

            def text(key: str) -> str | None:
                value = reply.get(key)
                return None if value is None else str(value)[: limit + 200]

            notice = (f"{stopped} process(es) your code started were still running when "
                      "the call returned and were stopped: nothing runs between calls."
                      if stopped else None)
            return ExecResult(stdout=text("stdout") or "", stderr=text("stderr") or "",
                              value=text("value"), error=text("error"), notice=notice,
                              duration_s=time.perf_counter() - started)

    def update_workspace(self, variables: dict[str, Any]) -> None:
        """Set (or replace) workspace variables, e.g. after an environment tool call.
        They are also restored after any restart."""
        with self._lock:
            if self._closed:
                raise SandboxError("the interpreter is closed")
            self._workspace.update(variables)
            try:
                if self._proc is None:
                    self._start()
                else:
                    self._send_workspace(variables)
            except (_Timeout, _Died):
                self._restart("died", self._death_reason())

    def _log_tail(self, n: int = 4000) -> str:
        log = getattr(self, "_log", None)
        return log.tail(n) if log is not None else ""
