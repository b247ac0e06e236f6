"""The runner: executors, records, resume, summaries."""

from ..core.record import read_records
from .runner import RunResult, default_out_dir, run_episodes
from .summary import summarize_records

__all__ = ["RunResult", "default_out_dir", "read_records", "run_episodes", "summarize_records"]
