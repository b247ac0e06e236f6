"""A uid of its own for each sandbox on a root host, leased so that no two sandboxes on
the machine ever share one.

RLIMIT_NPROC counts processes per uid and the sandbox is killed by uid, so two
sandboxes sharing a uid would throttle and kill each other; a uid that a live process
still runs as (a sandbox killed with its host) must not be handed out either. A lease is
an exclusive `flock` on a file named after the uid, in a folder only root can enter: the
kernel drops the lock when the holder dies, so a crashed host leaves no stale lease.
Any process of the machine (Ray workers, parallel runs, other caches) sees the same
folder, so the leases hold across processes, not only threads."""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
import threading
from pathlib import Path


class NoUid(RuntimeError):
    """No uid could be leased (the sandbox layer turns this into SandboxUnavailable)."""

UID_BASE, UID_SPAN = 200_000, 60_000
_counter_lock = threading.Lock()
_counter = 0


def lease_folder() -> Path:
    """The machine's folder of leases: made by root, 0700, refused if anything else
    (a link or a folder another user made first, to steal or block uids)."""
    folder = Path(tempfile.gettempdir()) / "discoverygym-uid-leases"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid()
            or info.st_mode & 0o077):
        raise NoUid(f"{folder} is not a private folder of this user; remove it so "
                    "sandbox uids can be leased")
    return folder


class UidLease:
    """A uid held until `release()` (or the holder's death)."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # drops the lock
            self._fd = None


def _first_candidate() -> int:
    # Spread the starting points of processes and of calls in one process, so the
    # common case takes the first uid it tries.
    global _counter
    with _counter_lock:
        _counter += 1
        return (os.getpid() * 97 + _counter) % UID_SPAN


def lease_uid(in_use=None, attempts: int = 256) -> UidLease:
    """Lease a uid that no other lease holds and no live process runs as. `in_use`
    (uid -> bool) says whether a process runs as the uid (processes_of_uid)."""
    folder = lease_folder()
    start = _first_candidate()
    for step in range(attempts):
        uid = UID_BASE + (start + step) % UID_SPAN
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if in_use is not None and in_use(uid):
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise NoUid(f"no free sandbox uid after {attempts} tries")
