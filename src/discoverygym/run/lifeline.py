"""Workers die with their driver.

A pool worker or a Ray task outlives a driver killed with SIGKILL: nobody tells it to
stop, and the multiprocessing resource tracker stays up for as long as any worker holds
its pipe. Each worker therefore asks the kernel for SIGKILL when its parent dies
(PR_SET_PDEATHSIG; Linux) and also runs a watchdog thread that ends the process once
the driver's pid is gone. The watchdog is needed as well: the kernel's signal follows the
*thread* that started the worker, and Ray workers are children of the raylet, not of
the driver."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (killed, not yet reaped) counts as gone
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] not in (b"Z", b"X")
    except OSError:
        return True


def bind_to_driver(driver_pid: int) -> None:
    """Call first thing in a worker: it ends when `driver_pid` ends."""
    if sys.platform.startswith("linux") and os.getppid() == driver_pid:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if not _alive(driver_pid):  # it died before we got here
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCH_INTERVAL_S)
            if not _alive(driver_pid):
                os._exit(1)

    threading.Thread(target=watch, name="discoverygym-lifeline", daemon=True).start()


_bound = False


def ensure_bound(driver_pid: int) -> None:
    """`bind_to_driver` once per process (Ray reuses worker processes across tasks)."""
    global _bound
    if not _bound:
        _bound = True
        bind_to_driver(driver_pid)
