"""`discoverygym report RUN_DIR`: one self-contained HTML file (no network, no
scripts) built from a run directory's records, summary and configuration.

A run directory may come from anyone, so every value in it is hostile: strings are
escaped for HTML with controls stripped (core/escape.py), links keep only http, https
and relative addresses, long values are cut, deep values are drawn to a bounded depth,
and a field of the wrong type reads as missing instead of failing the report."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..core import get_suite
from ..core.budget import read_budgets
from ..core.escape import for_html, safe_href
from ..core.record import read_records
from ..run.note import verification_of
from ..run.summary import summarize_budgets
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


# Characters of one value shown in a table cell, and in an expandable excerpt.
CELL_CHARS = 300
EXCERPT_CHARS = 4000
# The largest summary.json or run.json read; a bigger one reads as missing.
MAX_JSON_BYTES = 20_000_000


def esc(value: Any, limit: int | None = CELL_CHARS) -> str:
    """Any value as inert HTML text, cut to `limit` characters."""
    return for_html(value, limit)


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
    rate = _number(rate)
    if rate is None:
        return _Raw("")
    return _Raw(f"{100.0 * rate:.1f} %")


def _number(value: Any) -> float | None:
    """A finite number from a record, or None (missing, text, NaN, 10**400)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _readable(record: dict[str, Any]) -> dict[str, Any]:
    """The fields the report reads, each of the type it expects: text for names, a
    bool (only JSON true passes), finite numbers or None, dicts for usage and details,
    and the budgets as `read_budgets` reads them (none for a record older than them)."""
    usage = {k: _number(v) or 0.0 for k, v in _dict(record.get("usage")).items()}
    task_id = record.get("task_id")
    return {**record, "suite": record.get("suite"),
            "task_id": task_id if isinstance(task_id, str) else _short(task_id),
            "passed": record.get("passed") is True, "score": _number(record.get("score")) or 0.0,
            "usage": usage, "budgets": read_budgets(record.get("usage")),
            "details": _dict(record.get("details"))}


def budget_text(budgets: list[dict[str, Any]]) -> str:
    """An episode's budgets in a few words: "6/20 observations, 1/1 submissions" (a
    count without a limit shows alone)."""
    return ", ".join(f"{b['spent']:g}/{b['limit']:g} {b['kind']}" if b["limit"] is not None
                     else f"{b['spent']:g} {b['kind']}" for b in budgets)


def verdict(passed: bool) -> _Raw:
    return _Raw('<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>')


def _episode_label(r: dict[str, Any]) -> str:
    parts = [r["task_id"]]
    if r.get("world"):
        parts.append(_short(r["world"]))
    parts.append(f"seed {_short(r.get('seed'))}")
    return " · ".join(parts)


def _transcript_cell(r: dict[str, Any]) -> _Raw:
    details = r["details"]
    link = details.get("transcript")
    excerpt = details.get("transcript_excerpt")
    out = ""
    href = safe_href(link)
    if href:
        out += f'<a href="{href}">transcript</a>'
    elif link:  # a javascript:, data: or other address is shown, never followed
        out += f'<span class="muted">transcript: {esc(_short(link))}</span>'
    if excerpt:
        out += (f"<details><summary>excerpt</summary><pre>{esc(excerpt, EXCERPT_CHARS)}"
                "</pre></details>")
    return _Raw(out)


def _rollup(suite_name: Any, task_ids: list[str]) -> dict[str, str] | None:
    """The suite's groups of tasks for the table (None: one row per task, also where
    the suite cannot be loaded: records may name any suite)."""
    from ..core.suite import rollup_labels

    try:
        return rollup_labels(get_suite(str(suite_name)), task_ids)
    except Exception:  # noqa: BLE001 - an unknown or broken suite: per task
        return None


def build_report(run_dir: Path) -> str:
    """The report's HTML for a run directory."""
    run_dir = Path(run_dir)
    unreadable: list[int] = []
    lines = read_records(run_dir / "records.jsonl", unreadable)
    raw_records = [r for r in lines if isinstance(r, dict)]
    n_not_records = len(unreadable) + len(lines) - len(raw_records)
    records = [_readable(r) for r in raw_records]
    summary = _load_json(run_dir / "summary.json")
    run_info = _load_json(run_dir / "run.json")
    suite_name = records[0]["suite"] if records else summary.get("suite")
    who = summary.get("model") or summary.get("agent") or run_info.get("who")
    mean_usage = _dict(summary.get("mean_usage"))
    parts = [f"<h1>discoverygym · {esc(suite_name)} · {esc(who)}</h1>",
             f'<p class="muted">{esc(run_dir)} · created {esc(run_info.get("created"))} · '
             f'discoverygym {esc(_dict(run_info.get("versions")).get("discoverygym"))}</p>',
             verification_html(run_dir)]

    parts.append("<h2>Summary</h2>")
    if n_not_records:
        lines_are = "1 line of records.jsonl is not a record" if n_not_records == 1 else \
            f"{n_not_records} lines of records.jsonl are not records"
        parts.append(f'<p class="fail">{lines_are} (torn, not a JSON object, or nested too '
                     "deep to read); the report leaves them out.</p>")
    parts.append(table(
        ["episodes", "passed", "pass rate", "± s.e.", "mean score", "errors", "mean obs",
         "mean tool calls", "mean wall s"],
        [[summary.get("n_episodes"), summary.get("n_passed"), percent(summary.get("pass_rate")),
          percent(summary.get("pass_rate_stderr")), summary.get("mean_score"),
          summary.get("n_errors"),
          mean_usage.get("observations"), mean_usage.get("tool_calls"),
          mean_usage.get("wall_s")]],
        numeric=set(range(9))))

    budgets = summarize_budgets(raw_records)
    if budgets:  # from the records' usage.budget; records older than budgets have none
        parts.append("<h2>Budgets</h2>")
        parts.append(table(
            ["kind", "episodes", "limits", "mean spent", "max spent"],
            [[kind, b["n"], ", ".join("none" if x is None else f"{x:g}" for x in b["limits"]),
              b["mean_spent"], b["max_spent"]] for kind, b in budgets.items()],
            numeric={1, 3, 4}))

    by_task: dict[str, list[dict[str, Any]]] = {}
    groups = _rollup(suite_name, [r["task_id"] for r in records])
    for r in records:  # per task, or per group of tasks (the suite's rollup_tags)
        by_task.setdefault(groups[r["task_id"]] if groups else r["task_id"], []).append(r)
    if groups:
        parts.append(f"<h2>By {esc(' and '.join(get_suite(str(suite_name)).rollup_tags))}"
                     f"</h2><p class=\"muted\">{len(groups)} tasks rolled up; "
                     "summary.json has each task.</p>")
    else:
        parts.append("<h2>By task</h2>")
    parts.append(table(
        ["group" if groups else "task", "n", "passed", "rate", "mean score", "mean obs"],
        [[t, len(rs), sum(r["passed"] for r in rs), percent(sum(r["passed"] for r in rs) / len(rs)),
          sum(float(r["score"]) for r in rs) / len(rs),
          sum(float(r["usage"].get("observations", 0)) for r in rs) / len(rs)]
         for t, rs in sorted(by_task.items())], numeric={1, 2, 3, 4, 5}))

    if records:
        parts.append("<h2>Suite plots</h2>")
        try:
            sections = get_suite(str(suite_name)).report_sections(raw_records)
        except Exception as exc:  # a plotting bug must not lose the rest of the report
            sections = [("Suite plots unavailable", f"<p>{esc(type(exc).__name__)}: {esc(exc)}</p>")]
        if not sections:
            parts.append('<p class="muted">This suite adds no plots.</p>')
        for title, fragment in sections:
            parts.append(f"<h3>{esc(title)}</h3>{fragment}")

        parts.append("<h2>Usage</h2><div class=\"plots\">")
        for key, label in (("observations", "observations"), ("tool_calls", "tool calls"),
                           ("wall_s", "wall seconds")):
            values = [r["usage"].get(key, 0.0) for r in records]
            parts.append(histogram_html(values, label, label))
        tokens = [r["usage"].get("input_tokens", 0.0) + r["usage"].get("output_tokens", 0.0)
                  for r in records]
        if any(tokens):
            parts.append(histogram_html(tokens, "tokens", "tokens per episode"))
        parts.append("</div>")

    parts.append("<h2>Episodes</h2>")
    parts.append(table(
        ["episode", "verdict", "answer", "truth", "metric", "value", "threshold", "obs", "budget",
         "error", "transcript"],
        [[_episode_label(r), verdict(r["passed"]), _short(r.get("answer")), _short(r.get("truth")),
          _plain(r.get("metric")), _plain(r.get("value")), _plain(r.get("threshold")),
          r["usage"].get("observations"), budget_text(r["budgets"]),
          _plain(r.get("error")), _transcript_cell(r)] for r in records],
        numeric={5, 6, 7}))

    parts.append("<h2>Configuration</h2>")
    try:
        configuration = json.dumps(run_info, indent=2, default=str)
    except (RecursionError, ValueError):
        configuration = "(run.json is nested too deep to show)"
    parts.append(f"<pre>{esc(configuration, None)}</pre>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>discoverygym report: {esc(suite_name)} {esc(who)}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def verification_html(run_dir: Path) -> str:
    """Whether `discoverygym verify` confirmed this run, against which commitment and
    plan (run/note.py; a note older than the records reads as stale)."""
    note = verification_of(run_dir)
    status = note["status"]
    if status == "verified":
        against = (f"the key with commitment <code>{esc(note['commitment'])}</code>"
                   if note["commitment"] else "public draws (no key)")
        return (f'<p class="pass">Verified: every planned episode replayed against '
                f'{against}; plan digest <code>{esc(note["plan_digest"])}</code>.</p>')
    text = {"rejected": "Rejected by <code>discoverygym verify</code> (see verified.json).",
            "stale": "Not verified: records.jsonl or run.json changed after "
                     "<code>discoverygym verify</code> ran.",
            "unverified": "Not verified (<code>discoverygym verify RUN</code> replays it)."}
    return f'<p class="{"fail" if status != "unverified" else "muted"}">{text[status]}</p>'


def _short(value: Any, limit: int = 120) -> str:
    """An answer or truth for a table cell: numbers to 6 significant digits (inside
    lists and dicts too), cut at `limit` characters."""
    text = value if isinstance(value, str) else _compact(value, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: Any) -> Any:
    """A record field for a table cell: a finite number or None as itself (the table
    formats it), anything else as short text."""
    if value is None or (_number(value) is not None and not isinstance(value, bool)):
        return value
    return _short(value, CELL_CHARS)


def _compact(value: Any, limit: int, max_depth: int = 8) -> str:
    """A value as short text, iteratively: it stops once it has `limit` characters, and
    draws containers deeper than `max_depth` as "…", so 10,000 levels or a million
    items cost no more than a short one."""
    out: list[str] = []
    size = 0
    stack: list[tuple[Any, int] | str] = [(value, 0)]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, str):  # punctuation pushed by a container
            piece = item
        else:
            node, depth = item
            if isinstance(node, list | tuple | dict) and depth >= max_depth:
                piece = "…"
            elif isinstance(node, list | tuple):
                piece = "["
                stack.append("]")
                for i, child in enumerate(reversed(node[:limit])):
                    stack.append((child, depth + 1))
                    if i < min(len(node), limit) - 1:
                        stack.append(", ")
            elif isinstance(node, dict):
                piece = "{"
                stack.append("}")
                entries = list(node.items())[:limit]
                for i, (key, child) in enumerate(reversed(entries)):
                    stack.append((child, depth + 1))
                    stack.append(f"{str(key)[:limit]}: ")
                    if i < len(entries) - 1:
                        stack.append(", ")
            elif isinstance(node, float):
                piece = f"{node:.6g}"
            elif isinstance(node, str):
                piece = json.dumps(node[:limit])
            elif isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > 1000:
                piece = f"<integer of {node.bit_length()} bits>"
            else:
                piece = json.dumps(node, default=lambda v: str(v)[:limit])
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _load_json(path: Path) -> dict[str, Any]:
    """A JSON object from the run directory, or {} when it is missing, too big, not an
    object or nested past what json can read."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_JSON_BYTES:
            return {}
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, RecursionError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    out = Path(out) if out else Path(run_dir) / "report.html"
    out.write_text(build_report(Path(run_dir)), encoding="utf-8")
    return out
