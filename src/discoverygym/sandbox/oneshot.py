"""Run one Python script in a fresh sandboxed process (used by verifiers)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from .config import IsolatedResult, SandboxConfig
from .isolation import Layout, python_executable, resolve_level, sandbox_command, terminate

SCRIPT_NAME = "main.py"


def _read_limited(path: str, limit: int) -> bytes:
    """At most `limit` bytes of a captured stream, with a note when it was longer."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        data = fh.read(limit)
    if size > limit:
        data += f"\n[... output truncated: {size} bytes in total ...]\n".encode()
    return data


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
    config.output_limit_chars bytes. The run is killed after config.time_limit_s."""
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
        out_path, err_path = layout.root / "stdout", layout.root / "stderr"
        stdin_path = layout.root / "stdin"
        stdin_path.write_bytes(stdin)
        started = time.perf_counter()
        timed_out = False
        with open(out_path, "wb") as out, open(err_path, "wb") as err, \
                open(stdin_path, "rb") as sin:
            proc = subprocess.Popen(cmd, stdin=sin, stdout=out, stderr=err, env=env,
                                    cwd=layout.root, start_new_session=True)
            try:
                returncode: int | None = proc.wait(timeout=config.time_limit_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                returncode = None
            terminate(proc, layout)
        duration = time.perf_counter() - started
        limit = int(config.output_limit_chars)
        return IsolatedResult(
            returncode=returncode,
            stdout=_read_limited(str(out_path), limit),
            stderr=_read_limited(str(err_path), limit),
            timed_out=timed_out,
            killed_reason=_killed_reason(returncode, timed_out),
            isolation=level,
            duration_s=duration,
        )
    finally:
        layout.cleanup()
