"""Run one Python script in a fresh sandboxed process (used by verifiers)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from .config import IsolatedResult, SandboxConfig
from .isolation import Layout, python_executable, resolve_level, sandbox_command, terminate

SCRIPT_NAME = "main.py"
#: How long output is still read after the script's process ended (its pipes may be
#: held open by a process it left behind, which is then killed).
EXIT_GRACE_S = 0.5


class _Capture:
    """One output stream of the sandbox, kept up to `limit` bytes; the rest is read
    and dropped (so the writer does not block) and only counted, up to `close_after`
    bytes: then the host closes its end and the writer's next write fails (EPIPE), as
    writing past RLIMIT_FSIZE failed when the streams were files."""

    def __init__(self, limit: int, close_after: int) -> None:
        self.limit = limit
        self.close_after = close_after
        self.kept = bytearray()
        self.total = 0
        self.closed = False

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]

    @property
    def full(self) -> bool:
        return self.total >= self.close_after

    def value(self) -> bytes:
        data = bytes(self.kept)
        if self.closed:
            data += (f"\n[... output truncated: the stream was closed after {self.total} "
                     "bytes ...]\n").encode()
        elif self.total > self.limit:
            data += f"\n[... output truncated: {self.total} bytes in total ...]\n".encode()
        return data


def _exchange(proc: subprocess.Popen, stdin: bytes, limit: int, close_after: int,
              deadline: float) -> tuple[_Capture, _Capture, bool]:
    """Feed `stdin` and read stdout and stderr (each bounded) until both end, the
    process has exited and EXIT_GRACE_S passed (a detached child may hold the pipes),
    or `deadline`. Returns (stdout, stderr, timed out)."""
    out, err = _Capture(limit, close_after), _Capture(limit, close_after)
    sel = selectors.DefaultSelector()
    assert proc.stdin and proc.stdout and proc.stderr
    streams = {proc.stdout.fileno(): proc.stdout, proc.stderr.fileno(): proc.stderr}
    captures = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    for fd in captures:
        sel.register(fd, selectors.EVENT_READ)
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    exited_at: float | None = None
    try:
        while captures:
            now = time.monotonic()
            if now >= deadline:
                return out, err, True
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                break
            for key, _ in sel.select(timeout=min(0.1, deadline - now)):
                fd = key.fd
                if fd in captures:
                    chunk = os.read(fd, 1 << 20)
                    capture = captures[fd]
                    capture.add(chunk)
                    if not chunk or capture.full:
                        sel.unregister(fd)
                        del captures[fd]
                        if chunk:
                            capture.closed = True
                            streams[fd].close()
                    continue
                try:
                    pending = pending[os.write(fd, pending[:1 << 16]):]
                except (BrokenPipeError, OSError):
                    pending = pending[:0]
                if not pending:
                    sel.unregister(fd)
                    proc.stdin.close()
    finally:
        sel.close()
    return out, err, False


def _killed_reason(returncode: int | None, timed_out: bool) -> str | None:
    if timed_out:
        return "timeout"
    if returncode is None or returncode >= 0:
        return None
    sig = -returncode
    if sig == signal.SIGXCPU:
        return "cpu-limit"
    if sig == signal.SIGKILL:
        return "killed (memory or process limit)"
    return f"signal {signal.Signals(sig).name}"


def run_isolated(script: str, stdin: bytes = b"", config: SandboxConfig | None = None,
                 files: dict[str, bytes] | None = None) -> IsolatedResult:
    """Run `script` with the sandbox's Python in a fresh isolated process.

    `files` (relative name -> bytes) are written into the private working directory
    first; the script itself is `main.py` there. stdout/stderr are cut to
    config.output_limit_chars bytes, and closed after config.file_size_mb MiB each.
    The run is killed after config.time_limit_s."""
    config = config or SandboxConfig()
    level = resolve_level(config)
    layout = Layout.create(level, config)
    layout.prefilled = True
    try:
        for name, content in {**(files or {}), SCRIPT_NAME: script.encode()}.items():
            target = (layout.home / name).resolve()
            if not str(target).startswith(str(layout.home.resolve()) + os.sep):
                raise ValueError(f"file name {name!r} leaves the working directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            if layout.uid is not None:
                os.chown(target, layout.uid, layout.gid)
        python = python_executable(config)
        cmd, _, env = sandbox_command(level, config, layout, [python, "-I", SCRIPT_NAME])
        started = time.perf_counter()
        deadline = time.monotonic() + float(config.time_limit_s)
        # Pipes, never host files: the sandboxed process holds no descriptor to a host
        # file, and what it prints is read with a bound.
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, cwd=layout.root,
                                start_new_session=True)
        try:
            out, err, timed_out = _exchange(proc, stdin, int(config.output_limit_chars),
                                            int(config.file_size_mb) << 20, deadline)
            returncode: int | None = None
            if not timed_out:
                try:
                    returncode = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            # Every process of the run is gone before anything it produced is used.
            terminate(proc, layout)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        duration = time.perf_counter() - started
        return IsolatedResult(
            returncode=returncode,
            stdout=out.value(),
            stderr=err.value(),
            timed_out=timed_out,
            killed_reason=_killed_reason(returncode, timed_out),
            isolation=level,
            duration_s=duration,
        )
    finally:
        layout.cleanup()
