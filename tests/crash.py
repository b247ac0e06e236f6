"""Crash a run for the resume tests: wait until a run in another process has written
some records, SIGKILL its whole process group (no cleanup), and leave a torn last line
as a crash in the middle of a write would."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from discoverygym.run import read_records


def kill_after_records(proc: subprocess.Popen, records: Path, at_least: int,
                       timeout_s: float = 120.0) -> int:
    """SIGKILL `proc`'s group once `records` holds `at_least` records (or the run ended,
    or `timeout_s` passed); returns how many records were there. `proc` must have been
    started with start_new_session=True."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and len(read_records(records)) >= at_least:
            break
        time.sleep(0.02)
    still_running = proc.poll() is None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert still_running, "the run ended before it could be killed"
    return len(read_records(records))


def tear_last_line(records: Path, fragment: str) -> None:
    """Append a partial record line (no newline)."""
    with records.open("a") as fh:
        fh.write(fragment)
