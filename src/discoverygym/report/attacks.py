"""The audit's attack on the readers of records (report/html.py, run/leaderboard.py,
core/escape.py): a run directory written by someone else, read by the real leaderboard
(terminal table, markdown) and the real report. Declared here, beside the readers (see
core.audit_registry; in report/ because the report already reads run/, not the other
way round).

The hostile run holds Rich markup, a clear-screen sequence, an OSC 8 hyperlink to
`javascript:`, a `|` and a newline in a name, `<script>`, a bidi override, a 1 MB
string, 10,000-deep JSON, 10**400, wrong-typed fields, a line that is not an object
and a torn line; and a second run whose records.jsonl is a FIFO, which would hang a
reader that opened it. Expected: every reader finishes, the output is inert (no control
character, markup shown as text, no script, no dangerous link, one markdown row per
group), and its size is bounded."""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

FAMILY = "readers"
MARKUP = "[bold red]x[/]"
CLEAR_SCREEN = "wipe\x1b[2Jd"
OSC8_LINK = "\x1b]8;;javascript:alert(1)\x1b\\click me\x1b]8;;\x1b\\"
PIPE_NEWLINE = "pipe|agent\nnew | row"
SCRIPT = "<script>alert(1)</script>"
BIDI = "admin\u202egnp.exe"
HUGE = "huge " + "A" * 1_000_000
HOSTILE_NAMES = (MARKUP, "[/]", CLEAR_SCREEN, OSC8_LINK, PIPE_NEWLINE, SCRIPT, BIDI,
                 "C1\x9b31mred", HUGE)
#: What a terminal or a browser would act on (C0 but tab and newline, DEL, C1, bidi).
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
DANGEROUS_HREF = re.compile(r'href\s*=\s*"\s*(javascript|data|vbscript):', re.IGNORECASE)
#: Bounds on what one reader prints for this run (the 1 MB string is cut).
MAX_TEXT_CHARS = 100_000
MAX_PAGE_CHARS = 2_000_000
#: How long a reader may take on the FIFO before it counts as hung.
FIFO_WAIT_S = 20.0


def _record(agent: str, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "suite": "gravity", "task_id": "period", "seed": 0, "options": {}, "agent": agent,
        "model": None, "passed": False, "score": 0.0, "metric": "rel_error", "value": 1.0,
        "threshold": 0.05, "answer": None, "truth": 1.0, "error": None, "details": {},
        "usage": {"observations": 1, "tool_calls": 1, "wall_s": 0.1}}
    record.update(fields)
    return record


def write_hostile_run(run: Path) -> Path:
    """A run directory as a third party could hand it over."""
    run.mkdir(parents=True, exist_ok=True)
    records = [_record(name) for name in HOSTILE_NAMES]
    records.append(_record("answers", answer=SCRIPT, truth={"x": [CLEAR_SCREEN]},
                           error="\x1b[31m" + "E" * 1_000_000, metric=MARKUP,
                           details={"transcript": "javascript:alert(1)",
                                    "transcript_excerpt": SCRIPT + CLEAR_SCREEN}))
    records.append(_record("links", task_id=SCRIPT, world=OSC8_LINK,
                           details={"transcript": " JaVa\tScRiPt:alert(1)"}))
    records.append(_record("types", passed="yes", score="NaN", usage={"observations": "x"}))
    lines = [json.dumps(r) for r in records]
    deep = "[" * 10_000 + "1" + "]" * 10_000
    lines.append(json.dumps(_record("deep")).replace('"answer": null', f'"answer": {deep}'))
    lines.append(json.dumps(_record("huge int")).replace('"value": 1.0',
                                                         f'"value": {10**400}'))
    lines += ['"not an object"', '{"agent": "torn", "pass']
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    (run / "run.json").write_text(json.dumps({"who": SCRIPT, "created": CLEAR_SCREEN}))
    (run / "summary.json").write_text(json.dumps({"agent": OSC8_LINK, "pass_rate": "x"}))
    return run


def _inert_text(text: str, what: str) -> tuple[bool, str]:
    controls = sorted({repr(c) for c in CONTROLS.findall(text)})
    problems = []
    if controls:
        problems.append(f"control characters {', '.join(controls[:5])}")
    if "javascript" in text.lower():
        problems.append("a javascript: link")
    if len(text) > MAX_TEXT_CHARS:
        problems.append(f"{len(text)} chars")
    return not problems, f"{what}: " + ("; ".join(problems) if problems else
                                        f"{len(text)} chars, inert")


def _terminal(run: Path) -> tuple[bool, str]:
    from rich.console import Console

    from ..run.leaderboard import leaderboard, terminal_table

    rows = leaderboard([str(run)], ["agent"])
    buffer = io.StringIO()
    Console(file=buffer, width=200, force_terminal=False, color_system=None).print(
        terminal_table(rows, ["agent"], 200))
    text = buffer.getvalue()
    ok, observed = _inert_text(text, "table")
    shown = all(s in text for s in (MARKUP, "wiped", "click me", SCRIPT))
    return ok and shown, observed + ("" if shown else "; markup not shown as text")


def _markdown(run: Path) -> tuple[bool, str]:
    from ..run.leaderboard import format_rows, leaderboard

    rows = leaderboard([str(run)], ["agent"])
    text = format_rows(rows, "markdown")
    ok, observed = _inert_text(text, "markdown")
    lines = text.splitlines()
    cells = len(rows[0]) + 1 if rows else 0
    bad_rows = [line[:60] for line in lines
                if len(re.findall(r"(?<!\\)\|", line)) != cells]
    rows_ok = len(lines) == 2 + len(rows) and not bad_rows
    return ok and rows_ok, (observed + f", {len(lines)} lines for {len(rows)} groups"
                            + (f", broken rows {bad_rows[:2]}" if bad_rows else ""))


def _report(run: Path) -> tuple[bool, str]:
    from .html import build_report

    page = build_report(run)
    problems = []
    if "<script" in page.lower():
        problems.append("a <script> tag")
    if DANGEROUS_HREF.search(page):
        problems.append("a javascript:/data: link")
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", page):
        problems.append("control characters")
    if len(page) > MAX_PAGE_CHARS:
        problems.append(f"{len(page)} chars")
    return not problems, "report: " + ("; ".join(problems) if problems
                                       else f"{len(page)} chars, inert")


def _fifo(run: Path, reader: Callable[[Path], Any]) -> tuple[bool, str]:
    """A reader on a run whose records.jsonl is a FIFO nobody writes: refused or empty,
    within FIFO_WAIT_S. (A hung reader thread is released by opening the FIFO's write
    end, so the audit itself never hangs.)"""
    run.mkdir(parents=True, exist_ok=True)
    fifo = run / "records.jsonl"
    if not fifo.exists():
        os.mkfifo(fifo)
    outcome: dict[str, str] = {}

    def read() -> None:
        try:
            reader(run)
            outcome["how"] = "read as no records"
        except Exception as exc:  # noqa: BLE001 - a refusal is the expected outcome
            outcome["how"] = f"refused ({type(exc).__name__})"
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(FIFO_WAIT_S)
    if thread.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # release the reader
        os.close(fd)
        thread.join(5)
        return False, f"still reading the FIFO after {FIFO_WAIT_S:.0f} s"
    return True, outcome["how"]


def _leaderboard_rows(run: Path) -> Any:
    from ..run.leaderboard import leaderboard

    return leaderboard([str(run)], ["agent"])


def _report_page(run: Path) -> Any:
    from .html import build_report

    return build_report(run)


def reader_attacks(target: AuditTarget) -> list[Outcome]:
    """The hostile run through each reader. Skipped (and said so) without DuckDB."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return [Outcome(FAMILY, "all", "inert output", "no leaderboard extra (DuckDB) "
                        "installed: reader attacks skipped", True)]
    with tempfile.TemporaryDirectory(prefix="dg-audit-readers-") as tmp:
        run = write_hostile_run(Path(tmp) / "hostile")
        expected = "finishes; no control character, markup as text, no script or link"
        return [
            guard(FAMILY, "hostile records into the leaderboard table", expected,
                  lambda: _terminal(run)),
            guard(FAMILY, "hostile records into the markdown leaderboard",
                  expected + "; one row per group", lambda: _markdown(run)),
            guard(FAMILY, "hostile records into the HTML report", expected,
                  lambda: _report(run)),
            guard(FAMILY, "records.jsonl is a FIFO (leaderboard)", "refused, no hang",
                  lambda: _fifo(Path(tmp) / "fifo-leaderboard", _leaderboard_rows)),
            guard(FAMILY, "records.jsonl is a FIFO (report)", "refused, no hang",
                  lambda: _fifo(Path(tmp) / "fifo-report", _report_page)),
        ]


ATTACKS = (
    AttackFamily(FAMILY, "a hostile run directory (markup, escapes, script, links, huge "
                 "and deep values, a FIFO) through the leaderboard and the report",
                 reader_attacks),
)
