"""How a packages run is shown: the NatureBench aggregates as a table."""

from __future__ import annotations

from typing import Any

from ...core.escape import for_terminal
from ...naturegym.format.scoring import BUCKET_LABELS


def aggregate_table(agg: dict[str, Any], title: str, width: int | None = None) -> Any:
    """The NatureBench aggregates (summary.json's suite_summary) as a table: one row for
    all tasks, one per domain. It fits `width` columns (default: the terminal's) without
    cutting a g value: the bucket columns are left out first, and the caption says so."""
    import shutil

    from ...core.fit_table import fit_table

    headers = ["tasks", "n", "surpass", "match", "mean g_clipped", "median g_clipped",
               "done", *(f"g {b.replace(' ', '')}" for b in BUCKET_LABELS)]
    rows = []

    def row(label: str, a: dict[str, Any]) -> None:
        if not a.get("n_tasks"):
            return
        rows.append([for_terminal(label), str(a["n_tasks"]), f"{a['surpass_rate']:.0%}",
                     f"{a['match_rate']:.0%}", f"{a['mean_g']:+.3f}", f"{a['median_g']:+.3f}",
                     f"{a['completion_rate']:.0%}",
                     *(str(a["buckets"][b]) for b in BUCKET_LABELS)])

    row("all", agg)
    for domain, sub in agg.get("per_domain", {}).items():
        row(f"  {domain}", sub)
    return fit_table(title, headers, rows, numeric=set(range(1, len(headers))),
                     width=width or shutil.get_terminal_size().columns,
                     caption="surpass: g > 0.1 · match: g >= 0 · mean/median: g_clipped "
                             "(each instance floored at -1) · failed or invalid tasks count "
                             "g = -1 · g buckets: tasks per bucket of published g")
