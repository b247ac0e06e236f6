"""Self-contained HTML reports built from run directories."""

from .html import build_report, write_report

__all__ = ["build_report", "write_report"]
