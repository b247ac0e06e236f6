"""Run a script in an isolated process: the one place tpbench touches process isolation.

Uses the project sandbox (`discoverygym.sandbox.run_isolated`) when it is available.
Until then (or where it is missing) a local runner does the same job: bubblewrap with
no network, a read-only root, an empty /tmp and the package, the caches and every
problem directory hidden; limits on time, memory and processes. Without bubblewrap
it falls back to a plain subprocess and says so in `isolation` (and in the verdict)."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.paths import cache_root, package_dir

#: Directories hidden from answers besides the package and the caches (problem sets
#: loaded from elsewhere register themselves here).
HIDDEN_DIRS: set[str] = set()
OUTPUT_LIMIT_BYTES = 4_000_000


@dataclass
class ExecutionResult:
    """What came back from one isolated run (the sandbox's IsolatedResult shape)."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    killed_reason: str | None
    isolation: str
    duration_s: float


def hide_directory(path: str | Path) -> None:
    """Hide a directory (e.g. an external problem set) from every later run."""
    HIDDEN_DIRS.add(str(Path(path).resolve()))


def execute_candidate(script: str, stdin: bytes, *, time_limit_s: float,
                      memory_mb: int) -> ExecutionResult:
    """Run `script` with `stdin` in an isolated process under the given limits."""
    try:
        from ...sandbox import SandboxConfig, run_isolated  # type: ignore[attr-defined]
    except ImportError:
        return _run_local(script, stdin, time_limit_s=time_limit_s, memory_mb=memory_mb)
    config = _sandbox_config(SandboxConfig, time_limit_s, memory_mb)
    res = run_isolated(script, stdin=stdin, config=config)
    return ExecutionResult(res.returncode, res.stdout, res.stderr, res.timed_out,
                           res.killed_reason, str(res.isolation), res.duration_s)


def _sandbox_config(config_cls, time_limit_s: float, memory_mb: int):  # noqa: ANN001
    """A SandboxConfig with our limits and hidden paths where the config takes them."""
    kwargs: dict = {"time_limit_s": time_limit_s, "memory_mb": memory_mb}
    fields = getattr(config_cls, "__dataclass_fields__", {})
    optional = {"output_limit_chars": OUTPUT_LIMIT_BYTES, "cpu_s": int(time_limit_s) + 5,
                "preload": {}}
    kwargs.update({k: v for k, v in optional.items() if k in fields})
    for name in ("hidden_paths", "hide_paths", "extra_hidden_paths"):
        if name in fields:
            kwargs[name] = tuple(sorted(HIDDEN_DIRS))
            break
    return config_cls(**kwargs)


def _limits(memory_mb: int, cpu_s: int):  # noqa: ANN202
    def apply() -> None:
        os.setsid()
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _hidden_paths() -> list[str]:
    paths = {str(package_dir()), str(cache_root()), *HIDDEN_DIRS}
    repo = package_dir().parent.parent  # src layout: hide the checkout's tests and data
    if (repo / "pyproject.toml").exists():
        paths.add(str(repo))
    return sorted(p for p in paths if Path(p).exists())


def _run_local(script: str, stdin: bytes, *, time_limit_s: float,
               memory_mb: int) -> ExecutionResult:
    with tempfile.TemporaryDirectory(prefix="tpbench-") as work:
        script_path = Path(work) / "main.py"
        script_path.write_text(script, encoding="utf-8")
        python = sys.executable
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        bwrap = shutil.which("bwrap")
        if bwrap:
            hidden = _hidden_paths()
            cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--tmpfs", "/tmp"]
            for path in hidden:
                cmd += ["--tmpfs", path]
            if any(sys.prefix.startswith(h + os.sep) for h in hidden):
                # the virtual environment lives inside the hidden checkout: show it again
                cmd += ["--ro-bind", sys.prefix, sys.prefix]
            cmd += ["--ro-bind", work, "/tmp/run", "--chdir", "/tmp/run", "--unshare-all",
                    "--die-with-parent", "--new-session", python, "-I", "-B", "/tmp/run/main.py"]
            isolation = "bubblewrap"
        else:
            cmd = [python, "-I", "-B", str(script_path)]
            isolation = "subprocess (no bubblewrap: answers can read the host's files)"
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=work, env=env,
                                preexec_fn=_limits(memory_mb, int(time_limit_s) + 2))
        timed_out = False
        try:
            out, err = proc.communicate(stdin, timeout=time_limit_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        duration = time.perf_counter() - start
        killed = "time limit" if timed_out else (
            f"signal {-proc.returncode}" if proc.returncode and proc.returncode < 0 else None)
        return ExecutionResult(proc.returncode, out[-OUTPUT_LIMIT_BYTES:], err[-20_000:], timed_out,
                               killed, isolation, duration)
