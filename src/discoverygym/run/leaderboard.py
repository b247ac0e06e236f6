"""Leaderboards computed with DuckDB straight from records.jsonl files (no copy into
another store)."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

# Top-level record fields; any other group key is looked up in options, then details.
TOP_LEVEL = ("suite", "task_id", "agent", "model", "protocol", "world", "seed", "metric")


def record_files(paths: list[str]) -> list[str]:
    """records.jsonl files from run directories, files or glob patterns."""
    files: list[str] = []
    for pattern in paths or ["runs/*"]:
        for match in sorted(glob.glob(pattern)) or [pattern]:
            p = Path(match)
            if p.is_dir() and (p / "records.jsonl").exists():
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
    if key in TOP_LEVEL:
        return f"json ->> '$.{key}'"
    return f"coalesce(json ->> '$.options.{key}', json ->> '$.details.{key}')"


def leaderboard(paths: list[str], by: list[str]) -> list[dict[str, Any]]:
    """Pass rate (with binomial standard error), mean score, mean usage and cost per
    group. Every record counts; a missing answer is a failed record."""
    import duckdb

    files = record_files(paths)
    keys = by or ["suite", "agent", "model"]
    selects = ", ".join(f"{_key_sql(k)} AS \"{k}\"" for k in keys)
    group = ", ".join(f'"{k}"' for k in keys)
    usage = "CAST(json ->> '$.usage.{}' AS DOUBLE)"
    sql = f"""
        WITH r AS (
            SELECT {selects},
                   CAST(json ->> '$.passed' AS BOOLEAN) AS passed,
                   CAST(json ->> '$.score' AS DOUBLE) AS score,
                   {usage.format('observations')} AS observations,
                   {usage.format('tool_calls')} AS tool_calls,
                   {usage.format('input_tokens')} + {usage.format('output_tokens')} AS tokens,
                   {usage.format('usd')} AS usd,
                   {usage.format('wall_s')} AS wall_s
            FROM read_ndjson_objects(?, filename = true)
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
               avg(wall_s) AS mean_wall_s
        FROM r GROUP BY {group} ORDER BY pass_rate DESC, {group}
    """
    con = duckdb.connect()
    try:
        cur = con.execute(sql, [files])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def format_rows(rows: list[dict[str, Any]], fmt: str) -> str:
    """Render rows as csv, json or markdown (the table format is Rich's, in the CLI)."""
    import csv
    import io
    import json

    if fmt == "json":
        return json.dumps(rows, indent=2, default=str)
    cols = list(rows[0]) if rows else []
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=cols)
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()
    if fmt == "markdown":
        def cell(v: Any) -> str:
            return f"{v:.4g}" if isinstance(v, float) else ("" if v is None else str(v))

        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(cell(r[c]) for c in cols) + " |" for r in rows]
        return "\n".join(lines)
    raise ValueError(f"Unknown format {fmt!r}; choose table, csv, json or markdown.")
