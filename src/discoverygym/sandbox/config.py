"""Configuration and result types of the sandbox."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SandboxConfig:
    """Limits and isolation settings for sandboxed Python.

    time_limit_s: wall-clock seconds per execution (interpreter) or per run (one-shot).
    memory_mb: address-space limit (RLIMIT_AS) in MiB, per process.
    total_memory_mb: memory (proportional set size) of all the sandbox's processes
        together, in MiB; None: memory_mb. Enforced by the kernel where a cgroup v2
        memory controller is available, else measured every 0.1 s while a call runs.
    cpu_s: CPU seconds (RLIMIT_CPU) over the life of the process.
    output_limit_chars: stdout and stderr are each cut to this many characters.
    max_processes: processes + threads the sandbox may hold (RLIMIT_NPROC).
    file_size_mb: largest file the sandbox may write (RLIMIT_FSIZE), in MiB.
    writable_mb: size of each of the sandbox's own writable areas, its home and /tmp
        (fresh tmpfs mounts under bubblewrap and unshare; writing past it fails with
        "No space left on device"). A task's writable binds (OUTPUT_DIR) are host
        folders, bounded by file_size_mb per file and by what evaluations copy.
    isolation: None picks the strongest level the host allows; or force one of
        "bubblewrap", "unshare", "rlimits-uid", "rlimits-only".
    minimum_isolation: the weakest level this work may run at (None: any). Below it
        nothing runs: `SandboxUnavailable` says why (a verifier turns that into a
        failed record, never a score).
    hidden_paths: extra host paths the sandbox must not see (added to the cache,
        the package source and the current directory's runs/).
    ro_binds, rw_binds: host directories shown inside the sandbox at the same path,
        read-only or writable (a task's data and output folders). A bind may not
        contain a hidden path.
    python: interpreter to run (default: the host's own, i.e. the project venv).
    preload: modules imported into the interpreter's namespace at start (name -> alias).
    """

    time_limit_s: float = 10.0
    memory_mb: int = 2048
    total_memory_mb: int | None = None
    cpu_s: int = 60
    output_limit_chars: int = 20000
    max_processes: int = 64
    file_size_mb: int = 64
    writable_mb: int = 512
    isolation: str | None = None
    minimum_isolation: str | None = None
    hidden_paths: tuple[str, ...] = ()
    ro_binds: tuple[str, ...] = ()
    rw_binds: tuple[str, ...] = ()
    python: str | None = None
    preload: dict[str, str] = field(default_factory=lambda: {"numpy": "np", "pandas": "pd"})


@dataclass
class IsolatedResult:
    """Outcome of `run_isolated`. `returncode` is None when the process was killed by
    us (timeout); negative when it died of a signal. `killed_reason` is "timeout",
    "cpu-limit", "memory-limit" or "signal N" when the run did not end by itself."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool
    killed_reason: str | None
    isolation: str
    duration_s: float


@dataclass
class ExecResult:
    """Outcome of one `Interpreter.execute`. `value` is the repr of a bare last
    expression (None if there was none or it was None); `error` the traceback text;
    `notice` a message for the agent when the interpreter had to be restarted."""

    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    timed_out: bool = False
    restarted: bool = False
    duration_s: float = 0.0
    notice: str | None = None

    def as_text(self) -> str:
        """One text block for an agent: notice, stdout, stderr, error, value."""
        parts: list[str] = []
        if self.notice:
            parts.append(f"[notice] {self.notice}")
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        if self.error:
            parts.append(self.error.rstrip("\n"))
        if self.value is not None:
            parts.append(self.value)
        return "\n".join(parts) if parts else "(no output)"
