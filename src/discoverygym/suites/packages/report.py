"""How a packages run is shown: the NatureBench aggregates as a table."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from ...core.escape import for_terminal
from ...naturegym.format.scoring import BUCKET_LABELS


def aggregate_table(agg: dict[str, Any], title: str) -> Table:
    """The NatureBench aggregates (summary.json's suite_summary) as a table: one row for
    all tasks, one per domain."""
    table = Table(title=title, caption="surpass: g > 0.1 · match: g >= 0 · mean/median: "
                  "g_clipped (each instance floored at -1) · failed or invalid tasks count "
                  "g = -1 · last five columns: tasks per g bucket (published g)")
    for name in ("tasks", "n", "surpass", "match", "mean g_clipped", "median g_clipped", "done",
                 *(b.replace(" ", "") for b in BUCKET_LABELS)):
        table.add_column(name, justify="left" if name == "tasks" else "right")

    def row(label: str, a: dict[str, Any]) -> None:
        if not a.get("n_tasks"):
            return
        table.add_row(for_terminal(label), str(a["n_tasks"]), f"{a['surpass_rate']:.0%}",
                      f"{a['match_rate']:.0%}", f"{a['mean_g']:+.3f}", f"{a['median_g']:+.3f}",
                      f"{a['completion_rate']:.0%}",
                      *(str(a["buckets"][b]) for b in BUCKET_LABELS))

    row("all", agg)
    for domain, sub in agg.get("per_domain", {}).items():
        row(f"  {domain}", sub)
    return table
