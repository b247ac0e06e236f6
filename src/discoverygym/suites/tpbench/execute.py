"""Run a script in an isolated process: the one place tpbench touches process isolation.

Everything goes through the project sandbox (`discoverygym.sandbox.run_isolated`):
no network, the package, its checkout, the caches and every registered external
problem directory hidden; limits on wall time, CPU, memory, processes and file size.
The isolation level actually used is reported back and recorded with each verdict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...sandbox import SandboxConfig, run_isolated

#: Directories hidden from answers besides the package and the caches (problem sets
#: loaded from elsewhere register themselves here).
HIDDEN_DIRS: set[str] = set()
#: Largest stdout kept from an answer's process (the results travel on stdout).
OUTPUT_LIMIT_BYTES = 4_000_000
#: The weakest sandbox an answer may run in. A problem's reference is a YAML file in
#: the installed package, and its reference outputs are cached on disk: below this
#: level (rlimits-only: the host's own user, no namespaces) an answer could read and
#: return them, or leave a process behind that outlives the verdict. At rlimits-uid
#: the answer runs as a uid of its own that cannot read the package, the cache or the
#: problem folders, and every process of it is killed before the verdict.
MINIMUM_ISOLATION = "rlimits-uid"


@dataclass
class ExecutionResult:
    """What came back from one isolated run (the sandbox's IsolatedResult fields)."""

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
                      memory_mb: int, minimum_isolation: str | None = MINIMUM_ISOLATION
                      ) -> ExecutionResult:
    """Run `script` with `stdin` in a fresh sandboxed process under the given limits
    (wall time in seconds, address space in MiB). Raises SandboxUnavailable, running
    nothing, where the host's sandbox is below `minimum_isolation`."""
    config = SandboxConfig(
        time_limit_s=time_limit_s, memory_mb=memory_mb, cpu_s=int(time_limit_s) + 5,
        output_limit_chars=OUTPUT_LIMIT_BYTES, hidden_paths=tuple(sorted(HIDDEN_DIRS)),
        preload={},  # answers import what they need; nothing is pre-imported
        minimum_isolation=minimum_isolation,
    )
    res = run_isolated(script, stdin=stdin, config=config)
    return ExecutionResult(res.returncode, res.stdout, res.stderr, res.timed_out,
                           res.killed_reason, str(res.isolation), res.duration_s)
