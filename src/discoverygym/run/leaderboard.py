"""Leaderboards computed with DuckDB straight from records.jsonl files (no copy into
another store)."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

# Top-level record fields; any other group key is looked up in options, then details.
TOP_LEVEL = ("suite", "task_id", "agent", "model", "protocol", "world", "seed", "metric")
# The figures of every group, in the order they are shown.
METRICS = ("n", "n_passed", "pass_rate", "pass_rate_se", "mean_score", "mean_observations",
           "mean_tool_calls", "mean_tokens", "total_usd", "mean_wall_s", "n_public", "verified",
           "commitment")
# Their headers in the terminal table: short, with spaces where a narrow column wraps.
METRIC_LABELS = {"n": "n", "n_passed": "passed", "pass_rate": "pass rate",
                 "pass_rate_se": "± s.e.", "mean_score": "mean score",
                 "mean_observations": "mean obs", "mean_tool_calls": "mean tool calls",
                 "mean_tokens": "mean tokens", "total_usd": "total usd",
                 "mean_wall_s": "mean wall s", "n_public": "public", "verified": "verified",
                 "commitment": "commitment"}
#: The output formats of `discoverygym leaderboard`.
FORMATS = ("table", "csv", "json", "markdown")
# What the terminal table shows unless asked (`--columns`): it fits 80 columns.
# "verified": whether `discoverygym verify` confirmed the group's runs (run/note.py).
TABLE_METRICS = ("n", "pass_rate", "pass_rate_se", "mean_score", "verified")


def record_files(paths: list[str]) -> list[str]:
    """records.jsonl files from run directories, files or glob patterns. Only regular
    files count: a FIFO or a link to /dev/zero in someone's run directory would hang
    the reader."""
    files: list[str] = []
    for pattern in paths or ["runs/*"]:
        for match in sorted(glob.glob(pattern)) or [pattern]:
            p = Path(match)
            if p.is_dir() and (p / "records.jsonl").is_file():
                files.append(str(p / "records.jsonl"))
            elif p.is_file() and p.name.endswith(".jsonl"):
                files.append(str(p))
    if not files:
        raise FileNotFoundError(f"No records.jsonl found under {paths or ['runs/*']}.")
    return files


def _key_sql(key: str) -> str:
    if key == "run":
        return "regexp_replace(filename, '/records\\.jsonl$', '')"
    if not key.replace("_", "").isalnum():
        raise ValueError(f"Bad group key {key!r}.")
    if key == "protocol":
        # mad records written before the protocol had one meaning held the variant
        # (predict, infer, ...) at the top and the protocol in options: read the protocol
        # from options for mad, so old and new records group alike.
        return ("CASE WHEN json ->> '$.suite' = 'mad' AND json ->> '$.options.protocol' "
                "IS NOT NULL THEN json ->> '$.options.protocol' ELSE json ->> '$.protocol' END")
    if key in TOP_LEVEL:
        return f"json ->> '$.{key}'"
    return f"coalesce(json ->> '$.options.{key}', json ->> '$.details.{key}')"


#: The group keys every record may be grouped by, whatever its suite.
ALWAYS_KEYS = ("run", *TOP_LEVEL)


def check_keys(paths: list[str], by: list[str]) -> None:
    """Refuse a group key that no record names (a typo such as `agnet` would otherwise
    group every record into one row), with the closest key the records do have."""
    import difflib

    import duckdb

    unknown = [k for k in by if k not in ALWAYS_KEYS]
    if not unknown:
        return
    for key in unknown:
        _key_sql(key)  # a key that is no name at all is refused first
    files = record_files(paths)
    con = duckdb.connect()
    try:
        # The option and detail names the records hold (first level only), for the check
        # and for the suggestion.
        names = {row[0] for row in con.execute(
            """SELECT DISTINCT unnest(json_keys(json, '$.options')) FROM
                   read_ndjson_objects(?, ignore_errors = true)
               WHERE json_type(json) = 'OBJECT' AND json_type(json, '$.options') = 'OBJECT'
               UNION SELECT DISTINCT unnest(json_keys(json, '$.details')) FROM
                   read_ndjson_objects(?, ignore_errors = true)
               WHERE json_type(json) = 'OBJECT' AND json_type(json, '$.details') = 'OBJECT'
            """, [files, files]).fetchall()}
    finally:
        con.close()
    for key in unknown:
        if key in names:
            continue
        choices = sorted({*ALWAYS_KEYS, *(n for n in names if isinstance(n, str))})
        close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]}?" if close else ""
        raise ValueError(f"No record has a group key {key!r}.{hint} Keys: "
                         f"{', '.join(choices[:40])}{' ...' if len(choices) > 40 else ''}.")


def broken_lines(paths: list[str]) -> int:
    """How many non-empty lines of the records files no reader can use (not JSON, or
    JSON but not an object): the leaderboard skips them, and says how many."""
    from ..core.record import read_records

    count = 0
    for name in record_files(paths):
        unreadable: list[int] = []
        lines = read_records(Path(name), unreadable)
        count += len(unreadable) + sum(1 for r in lines if not isinstance(r, dict))
    return count


def leaderboard(paths: list[str], by: list[str]) -> list[dict[str, Any]]:
    """Pass rate (with binomial standard error), mean score, mean usage and cost per
    group, and whether `discoverygym verify` confirmed the runs of the group (against
    which commitments). Every record counts; a missing answer is a failed record."""
    import duckdb

    from .note import verification_cell

    files = record_files(paths)
    keys = by or ["suite", "agent", "model"]
    selects = ", ".join(f"{_key_sql(k)} AS \"{k}\"" for k in keys)
    group = ", ".join(f'"{k}"' for k in keys)
    # TRY_CAST: a record from anyone may hold text where a number belongs; that value
    # counts as missing instead of failing the whole leaderboard. Only JSON true passes.
    usage = "TRY_CAST(json ->> '$.usage.{}' AS DOUBLE)"
    sql = f"""
        WITH r AS (
            SELECT {selects}, filename AS dg_run_file,
                   coalesce(json_type(json, '$.passed') = 'BOOLEAN'
                            AND json ->> '$.passed' = 'true', false) AS passed,
                   TRY_CAST(json ->> '$.score' AS DOUBLE) AS score,
                   {usage.format('observations')} AS observations,
                   {usage.format('tool_calls')} AS tool_calls,
                   {usage.format('input_tokens')} + {usage.format('output_tokens')} AS tokens,
                   {usage.format('usd')} AS usd,
                   {usage.format('wall_s')} AS wall_s,
                   -- a record of a public package (details.public, JSON true only)
                   coalesce(json_type(json, '$.details.public') = 'BOOLEAN'
                            AND json ->> '$.details.public' = 'true', false) AS public
            -- ignore_errors: a torn last line (a crash mid-write) is skipped, as
            -- read_records does; a line that is not a JSON object is no record.
            FROM read_ndjson_objects(?, filename = true, ignore_errors = true)
            WHERE json_type(json) = 'OBJECT'
        )
        SELECT {group},
               count(*) AS n,
               sum(CAST(passed AS INTEGER)) AS n_passed,
               avg(CAST(passed AS DOUBLE)) AS pass_rate,
               sqrt(avg(CAST(passed AS DOUBLE)) * (1 - avg(CAST(passed AS DOUBLE))) / count(*))
                   AS pass_rate_se,
               avg(score) AS mean_score,
               avg(observations) AS mean_observations,
               avg(tool_calls) AS mean_tool_calls,
               avg(tokens) AS mean_tokens,
               sum(usd) AS total_usd,
               avg(wall_s) AS mean_wall_s,
               sum(CAST(public AS INTEGER)) AS n_public,
               list(DISTINCT dg_run_file) AS run_files
        FROM r GROUP BY {group} ORDER BY pass_rate DESC, {group}
    """
    con = duckdb.connect()
    try:
        cur = con.execute(sql, [files])
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()
    notes: dict[Path, dict[str, Any]] = {}
    for row in rows:
        runs = [Path(f).parent for f in row.pop("run_files")]
        row["verified"], row["commitment"] = verification_cell(runs, notes)
    return rows


def choose_columns(rows: list[dict[str, Any]], by: list[str], columns: str | None,
                   default: tuple[str, ...] = METRICS) -> list[dict[str, Any]]:
    """The rows with the group keys and the figures `columns` names (comma separated, or
    "all"; None: `default`), in the order of METRICS."""
    if columns is None:
        wanted = list(default)
    elif columns.strip() == "all":
        wanted = list(METRICS)
    else:
        wanted = [c.strip() for c in columns.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in METRICS]
        if unknown or not wanted:
            raise ValueError(f"Unknown column {', '.join(map(repr, unknown)) or '(none)'}; "
                             f"choose from {', '.join(METRICS)} or all.")
    keep = [*by, *(m for m in METRICS if m in wanted)]
    return [{k: r[k] for k in keep if k in r} for r in rows]


#: The widest a name column grows to hold its longest word before that word folds.
NAME_WIDTH_MAX = 16


def terminal_table(rows: list[dict[str, Any]], keys: list[str], width: int) -> Any:
    """The leaderboard as a Rich table that fits `width` columns. Names (the group keys)
    fold onto more lines instead of ending in "…"; figures keep their full width (a
    folded number misreads) and their headers go one word per line when one line is too
    wide; figures that still do not fit beside the names are left out, and the caption
    says which. Every string from a record is made inert for the terminal."""
    from rich.table import Table

    from ..core.escape import for_terminal

    cols = list(rows[0]) if rows else []
    cells = [["–" if v is None else f"{v:.3g}" if isinstance(v, float) else for_terminal(v)
              for v in r.values()] for r in rows]
    names = [i for i, c in enumerate(cols) if c in keys]
    labels = {i: METRIC_LABELS.get(c, c) for i, c in enumerate(cols) if c not in keys}

    def widths(header: dict[int, str]) -> dict[int, int]:
        return {i: max([*(len(line) for line in header[i].splitlines()),
                        *(len(row[i]) for row in cells)]) for i in header}

    # A name folds at its spaces: its column is as wide as its longest word (a folded
    # "gravi" / "ty" misreads), up to 16 characters, so that a long model name without
    # spaces folds instead of pushing the figures off an 80-column table.
    name_width = {i: min(NAME_WIDTH_MAX, max(len(w) for w in [cols[i], *(word for row in cells
                                                             for word in row[i].split())]))
                  for i in names}

    def needed(figures: dict[int, int]) -> int:  # borders, padding, the names' words
        return (3 * (len(names) + len(figures)) + 1 + sum(figures.values())
                + sum(name_width.values()))

    figures = widths(labels)
    if needed(figures) > width:
        labels = {i: label.replace(" ", "\n") for i, label in labels.items()}
        figures = widths(labels)
    left_out = []
    while needed(figures) > width and len(figures) > 1:
        last = max(figures)
        left_out.insert(0, labels[last].replace("\n", " "))
        del figures[last]
    caption = (f"not shown at {width} columns: {', '.join(left_out)} (widen the terminal "
               "or choose --columns)") if left_out else None
    table = Table(title="leaderboard", caption=caption)
    for i in names:
        table.add_column(for_terminal(cols[i]), overflow="fold", min_width=name_width[i])
    for i in sorted(figures):
        table.add_column("\n".join(for_terminal(line) for line in labels[i].splitlines()),
                         justify="right", no_wrap=True, min_width=figures[i])
    for row in cells:
        table.add_row(*(row[i] for i in [*names, *sorted(figures)]))
    return table


def format_rows(rows: list[dict[str, Any]], fmt: str) -> str:
    """Render rows as csv, json or markdown (the terminal table is `terminal_table`).
    Strings come from records anyone may have written: markdown cells are escaped so
    they stay one cell of one row, and csv cells lose terminal escape sequences and
    control characters and cannot start a spreadsheet formula (json escapes them
    itself)."""
    import csv
    import io
    import json

    from ..core.escape import for_csv, for_markdown

    if fmt == "json":
        return json.dumps(rows, indent=2, default=str)
    cols = list(rows[0]) if rows else []
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols)
        writer.writeheader()
        writer.writerows({k: for_csv(v) for k, v in r.items()} for r in rows)
        return buf.getvalue()
    if fmt == "markdown":
        def cell(v: Any) -> str:
            return f"{v:.4g}" if isinstance(v, float) else for_markdown(v)

        lines = ["| " + " | ".join(for_markdown(c) for c in cols) + " |",
                 "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(cell(r[c]) for c in cols) + " |" for r in rows]
        return "\n".join(lines)
    raise ValueError(f"Unknown format {fmt!r}; choose table, csv, json or markdown.")
