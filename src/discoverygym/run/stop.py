"""SIGTERM stops a run the way Ctrl-C does.

A run stopped by Ctrl-C keeps its records, writes summary.json marked interrupted and
shuts its workers down; a run killed by SIGTERM (a scheduler's time limit, `kill PID`)
died where it stood: no summary, and the multiprocessing resource tracker complained
of leaked semaphores. While `sigterm_as_interrupt` is active, SIGTERM is handled as
SIGINT in this process, so every path that handles Ctrl-C (the runner's
KeyboardInterrupt, Inspect's cancellation) handles it too; `state.terminated` then
tells the command to exit 143 (128 + SIGTERM) rather than 130."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: Exit statuses of a run stopped by a signal (128 + its number, as a shell reports it).
EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


@dataclass
class StopState:
    terminated: bool = False

    @property
    def exit_code(self) -> int:
        return EXIT_TERMINATED if self.terminated else EXIT_INTERRUPTED


@contextmanager
def sigterm_as_interrupt() -> Iterator[StopState]:
    """While active, SIGTERM does what SIGINT does in this process (a second SIGTERM
    is a second Ctrl-C). Outside the main thread signals cannot be handled; nothing
    changes there."""
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def on_sigterm(signum: int, frame: object) -> None:
        state.terminated = True
        # Whoever handles Ctrl-C now (Python's KeyboardInterrupt, asyncio's runner under
        # Inspect) handles this; called directly, as SIGINT may be ignored in a
        # process started in the background.
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint):
            on_sigint(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield state
    finally:
        signal.signal(signal.SIGTERM, previous)
