"""Everything a sandbox starts, as one group: found, measured, frozen and killed together.

Per-process resource limits (RLIMIT_AS, RLIMIT_NPROC) do not bound a sandbox that
starts several processes, and a process the agent detaches would keep running after
its call returned. A `ProcessGroup` holds all of a sandbox's processes:

- with a cgroup v2 of its own (where the host lets us create one): membership is the
  cgroup's `cgroup.procs`, freezing is `cgroup.freeze`, killing is `cgroup.kill`, and
  `memory.max` / `pids.max` are set when those controllers are enabled there;
- otherwise, the processes running as the sandbox's own uid (root hosts) and every
  descendant of the sandbox's first process (a PID namespace keeps orphans there),
  found in /proc; freezing is SIGSTOP.

The interpreter's host-side driver freezes the group between calls (after killing every
process but the ones present at start-up), thaws it for the next call, and measures the
group's memory (proportional set size, so pages shared after a fork count once) and
process count while a call runs."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

_PAGE = os.sysconf("SC_PAGE_SIZE")
_counter = itertools.count()


def _cgroup2_mount() -> Path | None:
    try:
        with open("/proc/self/mounts") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) > 2 and parts[2] == "cgroup2":
                    return Path(parts[1])
    except OSError:
        pass
    return None


def _own_cgroup() -> str | None:
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        pass
    return None


_CGROUP_PARENT: Path | None | bool = False  # False: not probed yet


def cgroup_parent() -> Path | None:
    """A cgroup v2 directory under which this process may create sandbox cgroups, or
    None (no v2 hierarchy, or not writable here). Probed once."""
    global _CGROUP_PARENT
    if _CGROUP_PARENT is False:
        _CGROUP_PARENT = None
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is not None and own is not None and os.environ.get(
                "DISCOVERYGYM_SANDBOX_CGROUP", "1") != "0":
            parent = mount / own.lstrip("/")
            probe = parent / f"discoverygym-probe-{os.getpid()}"
            try:
                probe.mkdir()
                ok = (probe / "cgroup.kill").exists() and (probe / "cgroup.freeze").exists()
                probe.rmdir()
                if ok:
                    _CGROUP_PARENT = parent
            except OSError:
                pass
    return _CGROUP_PARENT  # type: ignore[return-value]


def _write(path: Path, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _ppid_and_uid(pid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        ppid = int(data[data.rindex(b")") + 2:].split()[1])
        uid = os.stat(f"/proc/{pid}").st_uid
        return ppid, uid
    except (OSError, ValueError, IndexError):
        return None


def process_memory_bytes(pid: int) -> int:
    """A process's proportional set size (shared pages split between their users), or
    its resident size where smaps_rollup is missing; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _signal(pid: int, sig: int, uid: int | None = None) -> None:
    """Send `sig` to `pid`, through a pidfd where available so a recycled pid is never
    hit: after opening the pidfd we check the process still has the expected uid."""
    try:
        if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
            fd = os.pidfd_open(pid)
            try:
                if uid is not None and os.stat(f"/proc/{pid}").st_uid != uid:
                    return
                signal.pidfd_send_signal(fd, sig)
            finally:
                os.close(fd)
        else:  # pragma: no cover - Python < 3.9 or a kernel without pidfd
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError, FileNotFoundError, OSError):
        pass


def _inner_pid(pid: int) -> int | None:
    """The pid of host process `pid` in its innermost PID namespace."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True  # gone
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] in (b"Z", b"X")


def _threads(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _task_running(pid: int, tid: str) -> bool:
    try:
        with open(f"/proc/{pid}/task/{tid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"R"


class ProcessGroup:
    """All processes of one sandbox. `wrap(cmd)` makes the command join the group before
    it runs anything; `settle(root_pid)` records the processes that belong to the
    sandbox's machinery (the interpreter and the namespace helpers), which freezing
    keeps and everything else loses."""

    def __init__(self, uid: int | None, *, memory_bytes: int | None = None,
                 max_processes: int | None = None) -> None:
        self.uid = uid
        self.root_pid: int | None = None
        self.keep: set[int] = set()
        self.frozen = False
        self.cgroup: Path | None = None
        self.enforced: list[str] = []  # limits the kernel enforces for us
        parent = cgroup_parent()
        if parent is not None:
            path = parent / f"discoverygym-sandbox-{os.getpid()}-{next(_counter)}"
            try:
                path.mkdir()
                self.cgroup = path
            except OSError:
                self.cgroup = None
        if self.cgroup is not None:
            controllers = (self.cgroup / "cgroup.controllers").read_text().split()
            if "memory" in controllers and memory_bytes:
                with contextlib.suppress(OSError):
                    _write(self.cgroup / "memory.max", str(int(memory_bytes)))
                    _write(self.cgroup / "memory.swap.max", "0")
                    self.enforced.append("memory")
            if "pids" in controllers and max_processes:
                with contextlib.suppress(OSError):
                    _write(self.cgroup / "pids.max", str(int(max_processes)))
                    self.enforced.append("pids")

    @property
    def mechanism(self) -> str:
        return "cgroup2" if self.cgroup is not None else "proc-scan"

    def wrap(self, cmd: list[str]) -> list[str]:
        """`cmd`, preceded by a shell that moves itself into the group's cgroup and then
        execs it (so nothing the sandbox starts can be born outside the cgroup)."""
        if self.cgroup is None:
            return cmd
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"',
                str(self.cgroup / "cgroup.procs"), *cmd]

    # ---- membership ----------------------------------------------------------------
    def members(self) -> list[int]:
        """Host pids of every live process of the sandbox."""
        if self.cgroup is not None:
            try:
                text = (self.cgroup / "cgroup.procs").read_text()
            except OSError:
                return []
            return [int(x) for x in text.split()]
        if self.root_pid is not None and os.path.exists(
                f"/proc/{self.root_pid}/task/{self.root_pid}/children"):
            return self._tree(self.root_pid)
        return self._scan()

    @staticmethod
    def _tree(root: int) -> list[int]:
        """`root` and its descendants, from /proc/<pid>/task/<tid>/children (cheap: no
        scan of every process). Orphans inside the sandbox's PID namespace are adopted
        by its init, which is in the tree."""
        found, todo = {root}, [root]
        while todo:
            pid = todo.pop()
            for tid in _threads(pid):
                try:
                    with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                        children = [int(x) for x in fh.read().split()]
                except (OSError, ValueError):
                    continue
                for child in children:
                    if child not in found:
                        found.add(child)
                        todo.append(child)
        return sorted(found) if os.path.exists(f"/proc/{root}") else []

    def _scan(self) -> list[int]:
        """Every process of the sandbox's uid and every descendant of its root, by a
        scan of /proc (where neither a cgroup nor the children lists are available)."""
        table: dict[int, tuple[int, int]] = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                info = _ppid_and_uid(int(name))
                if info is not None:
                    table[int(name)] = info
        found = {pid for pid, (_, uid) in table.items()
                 if self.uid is not None and uid == self.uid}
        if self.root_pid is not None and self.root_pid in table:
            found.add(self.root_pid)
            children: dict[int, list[int]] = {}
            for pid, (ppid, _) in table.items():
                children.setdefault(ppid, []).append(pid)
            todo = [self.root_pid]
            while todo:
                for child in children.get(todo.pop(), []):
                    if child not in found:
                        found.add(child)
                        todo.append(child)
        return sorted(found)

    def settle(self, root_pid: int, worker_pid: int | None = None) -> None:
        """Call once the sandbox's own machinery is up and no agent code has run: what
        exists now is kept across calls. `worker_pid` (as the sandbox sees it) names the
        process that runs agent code; only it is watched for work left running."""
        self.root_pid = root_pid
        self.keep = set(self.members()) | {root_pid}
        watched = [p for p in self.keep if worker_pid is None or _inner_pid(p) == worker_pid]
        self._threads = {pid: _threads(pid) for pid in watched}

    def _machinery_busy(self) -> bool:
        """Whether a kept process still works: a thread more than at start-up (agent
        code started one) or a thread running rather than waiting."""
        for pid, count in self._threads.items():
            tasks = _threads(pid)
            if len(tasks) > len(count) or any(_task_running(pid, t) for t in tasks):
                return True
        return False

    def quiet(self) -> int:
        """After a call: kill every process agent code started; freeze the machinery only
        if it is still busy (a thread left running, or a cell that forged its reply), so
        the common case costs one read of the member list. Returns how many processes
        were killed."""
        strays = [p for p in self.members() if p not in self.keep and not _zombie(p)]
        if strays or self._machinery_busy():
            return self.freeze()
        return 0

    def usage(self) -> tuple[int, int]:
        """(processes, memory in bytes) of the whole sandbox now."""
        pids = self.members()
        return len(pids), sum(process_memory_bytes(p) for p in pids)

    # ---- between calls ---------------------------------------------------------------
    def freeze(self, deadline_s: float = 5.0) -> int:
        """Stop the sandbox between calls: kill every process that was not there at
        start-up and freeze the rest. Returns how many processes were killed."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                _write(self.cgroup / "cgroup.freeze", "1")
        else:
            for pid in self.keep:
                _signal(pid, signal.SIGSTOP)
        self.frozen = True
        deadline = time.monotonic() + deadline_s
        killed: set[int] = set()
        while True:
            # a killed process stays a zombie until its (frozen) parent reaps it
            strays = [p for p in self.members() if p not in self.keep and not _zombie(p)]
            if not strays or time.monotonic() > deadline:
                return len(killed)
            for pid in strays:
                _signal(pid, signal.SIGKILL, None if self.cgroup is not None else self.uid)
            killed.update(strays)
            time.sleep(0.001)

    def thaw(self) -> None:
        if not self.frozen:
            return
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                _write(self.cgroup / "cgroup.freeze", "0")
        else:
            for pid in self.keep:
                _signal(pid, signal.SIGCONT)
        self.frozen = False

    def kill_all(self) -> None:
        """SIGKILL every process of the sandbox (frozen ones too)."""
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                _write(self.cgroup / "cgroup.kill", "1")
        for pid in self.members() if self.cgroup is not None else self._scan():
            _signal(pid, signal.SIGKILL)
        self.frozen = False

    def close(self, wait_s: float = 5.0) -> None:
        """Kill what is left and remove the cgroup."""
        self.kill_all()
        if self.cgroup is None:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                self.cgroup.rmdir()
                break
            except OSError:  # not empty yet: killed processes still being reaped
                time.sleep(0.01)
        self.cgroup = None
