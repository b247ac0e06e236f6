"""`discoverygym report RUN_DIR`: one self-contained HTML file (no network, no
scripts) built from a run directory's records, summary and configuration."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from ..core import get_suite
from ..run.records import read_records
from .figures import histogram_html

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;
     color:#222;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3} td.num{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37;font-weight:600} .fail{color:#c62828;font-weight:600}
.plot{max-width:100%;margin:.3rem} .plots{display:flex;flex-wrap:wrap;gap:.5rem}
pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;font-size:.8rem}
.scroll{overflow-x:auto;max-width:100%}
.muted{color:#777} details{margin:.3rem 0}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.4g}"
    return esc(value)


def table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{v if isinstance(v, _Raw) else fmt(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


class _Raw(str):
    """Trusted HTML produced by this module."""


def percent(rate: Any) -> _Raw:
    """A rate in [0, 1] as a percentage (one decimal), or empty when missing."""
    if rate is None:
        return _Raw("")
    return _Raw(f"{100.0 * float(rate):.1f} %")


def verdict(passed: bool) -> _Raw:
    return _Raw('<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>')


def _episode_label(r: dict[str, Any]) -> str:
    parts = [r["task_id"]]
    if r.get("world"):
        parts.append(r["world"])
    parts.append(f"seed {r['seed']}")
    return " · ".join(parts)


def _transcript_cell(r: dict[str, Any]) -> _Raw:
    details = r.get("details") or {}
    link = details.get("transcript")
    excerpt = details.get("transcript_excerpt")
    out = ""
    if link:
        out += f'<a href="{esc(link)}">transcript</a>'
    if excerpt:
        out += f"<details><summary>excerpt</summary><pre>{esc(excerpt)[:4000]}</pre></details>"
    return _Raw(out)


def build_report(run_dir: Path) -> str:
    """The report's HTML for a run directory."""
    run_dir = Path(run_dir)
    records = read_records(run_dir / "records.jsonl")
    summary = _load_json(run_dir / "summary.json")
    run_info = _load_json(run_dir / "run.json")
    suite_name = records[0]["suite"] if records else summary.get("suite")
    who = summary.get("model") or summary.get("agent") or run_info.get("who")
    parts = [f"<h1>discoverygym · {esc(suite_name)} · {esc(who)}</h1>",
             f'<p class="muted">{esc(run_dir)} · created {esc(run_info.get("created"))} · '
             f'discoverygym {esc(run_info.get("versions", {}).get("discoverygym"))}</p>']

    parts.append("<h2>Summary</h2>")
    parts.append(table(
        ["episodes", "passed", "pass rate", "± s.e.", "mean score", "errors", "mean obs",
         "mean tool calls", "mean wall s"],
        [[summary.get("n_episodes"), summary.get("n_passed"), percent(summary.get("pass_rate")),
          percent(summary.get("pass_rate_stderr")), summary.get("mean_score"),
          summary.get("n_errors"),
          summary.get("mean_usage", {}).get("observations"),
          summary.get("mean_usage", {}).get("tool_calls"),
          summary.get("mean_usage", {}).get("wall_s")]],
        numeric=set(range(9))))

    parts.append("<h2>By task</h2>")
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_task.setdefault(r["task_id"], []).append(r)
    parts.append(table(
        ["task", "n", "passed", "rate", "mean score", "mean obs"],
        [[t, len(rs), sum(r["passed"] for r in rs), percent(sum(r["passed"] for r in rs) / len(rs)),
          sum(float(r["score"]) for r in rs) / len(rs),
          sum(float(r["usage"].get("observations", 0)) for r in rs) / len(rs)]
         for t, rs in sorted(by_task.items())], numeric={1, 2, 3, 4, 5}))

    if records:
        parts.append("<h2>Suite plots</h2>")
        try:
            sections = get_suite(suite_name).report_sections(records)
        except Exception as exc:  # a plotting bug must not lose the rest of the report
            sections = [("Suite plots unavailable", f"<p>{esc(type(exc).__name__)}: {esc(exc)}</p>")]
        if not sections:
            parts.append('<p class="muted">This suite adds no plots.</p>')
        for title, fragment in sections:
            parts.append(f"<h3>{esc(title)}</h3>{fragment}")

        parts.append("<h2>Usage</h2><div class=\"plots\">")
        for key, label in (("observations", "observations"), ("tool_calls", "tool calls"),
                           ("wall_s", "wall seconds")):
            values = [float(r["usage"].get(key, 0) or 0) for r in records]
            parts.append(histogram_html(values, label, label))
        tokens = [float(r["usage"].get("input_tokens", 0) + r["usage"].get("output_tokens", 0))
                  for r in records]
        if any(tokens):
            parts.append(histogram_html(tokens, "tokens", "tokens per episode"))
        parts.append("</div>")

    parts.append("<h2>Episodes</h2>")
    parts.append(table(
        ["episode", "verdict", "answer", "truth", "metric", "value", "threshold", "obs", "error",
         "transcript"],
        [[_episode_label(r), verdict(r["passed"]), _short(r.get("answer")), _short(r.get("truth")),
          r.get("metric"), r.get("value"), r.get("threshold"), r["usage"].get("observations"),
          r.get("error"), _transcript_cell(r)] for r in records], numeric={5, 6, 7}))

    parts.append("<h2>Configuration</h2>")
    parts.append(f"<pre>{esc(json.dumps(run_info, indent=2, default=str))}</pre>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>discoverygym report: {esc(suite_name)} {esc(who)}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def _short(value: Any, limit: int = 120) -> str:
    """An answer or truth for a table cell: numbers to 6 significant digits (inside
    lists and dicts too), cut at `limit` characters."""
    text = value if isinstance(value, str) else _compact(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_compact(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, default=str)


def _load_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    out = Path(out) if out else Path(run_dir) / "report.html"
    out.write_text(build_report(Path(run_dir)), encoding="utf-8")
    return out
