"""Every reader of records is safe with any record: a run directory written by someone
else (Rich markup, escape sequences, `|` and newlines, `javascript:` links, <script>,
10 MB strings, 10,000-deep JSON) goes through the real commands (`leaderboard` as a
table and as markdown, `report`, `run --resume`'s summary) in a subprocess; they finish,
print no traceback and show the strings inertly. And the leaderboard reads at 80
columns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from discoverygym.core.escape import (
    for_csv,
    for_html,
    for_markdown,
    for_markdown_code,
    for_terminal,
    safe_href,
    strip_controls,
)
from discoverygym.run.leaderboard import choose_columns, leaderboard
from testpaths import TESTS

MARKUP = "[bold red]x[/]"
UNBALANCED = "[/]"
CLEAR_SCREEN = "wipe\x1b[2Jd"
OSC8_LINK = "\x1b]8;;javascript:alert(1)\x1b\\click me\x1b]8;;\x1b\\"
PIPE_NEWLINE = "pipe|agent\nnew | row"
SCRIPT = "<script>alert(1)</script>"
BIDI = "admin\u202egnp.exe"
HOSTILE_AGENTS = [MARKUP, UNBALANCED, CLEAR_SCREEN, OSC8_LINK, PIPE_NEWLINE, SCRIPT, BIDI,
                  "C1\x9b31mred", "huge " + "A" * 10_000_000]


def _record(agent: str, **fields) -> dict:
    record = {"suite": "gravity", "task_id": "mass_ratio", "seed": 0, "options": {},
              "agent": agent, "model": None, "passed": False, "score": 0.0,
              "metric": "rel_error", "value": 1.0, "threshold": 0.05, "answer": None,
              "truth": 1.0, "error": None, "details": {},
              "usage": {"observations": 1, "tool_calls": 1, "input_tokens": 0,
                        "output_tokens": 0, "usd": 0.0, "wall_s": 0.1}}
    record.update(fields)
    return record


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> Path:
    """A run directory as a third party could hand it over."""
    run = tmp_path_factory.mktemp("hostile") / "run"
    run.mkdir()
    records = [_record(agent) for agent in HOSTILE_AGENTS]
    records.append(_record("answers", answer=SCRIPT, truth={"x": [CLEAR_SCREEN]},
                           error="\x1b[31m" + "E" * 10_000_000, metric=MARKUP,
                           details={"transcript": "javascript:alert(1)",
                                    "transcript_excerpt": SCRIPT + CLEAR_SCREEN}))
    records.append(_record("links", task_id=SCRIPT, world=OSC8_LINK,
                           details={"transcript": " JaVa\tScRiPt:alert(1)"}))
    records.append(_record("data", details={"transcript": "data:text/html,<b>x</b>"}))
    records.append(_record("types", passed="yes", score="NaN", usage={"observations": "x"}))
    lines = [json.dumps(r) for r in records]
    deep = "[" * 10_000 + "1" + "]" * 10_000
    lines.append(json.dumps(_record("deep")).replace('"answer": null', f'"answer": {deep}'))
    lines.append('{"agent": "deep details", "details": ' + '{"a": ' * 5000 + "1"
                 + "}" * 5000 + "}")
    lines.append('"not an object"')
    lines.append('{"agent": "torn", "pass')  # a crash mid-write
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    (run / "run.json").write_text(json.dumps({"who": SCRIPT, "created": CLEAR_SCREEN}))
    (run / "summary.json").write_text(json.dumps({"agent": OSC8_LINK, "pass_rate": "x",
                                                  "mean_usage": [1, 2]}))
    return run


def _discoverygym(*args: str, columns: int = 200, timeout_s: float = 300,
                  **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(TESTS), **env}
    environment.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "discoverygym.cli", *args],
                          capture_output=True, text=True, timeout=timeout_s, env=environment,
                          encoding="utf-8", errors="replace")


def _finished_cleanly(done: subprocess.CompletedProcess) -> str:
    """The output of a command that exited 0 without a traceback and without a single
    control character a terminal would act on."""
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "Traceback" not in output and "Error" not in done.stderr, output[-3000:]
    controls = re.findall(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", output)
    assert not controls, f"raw control characters reached the terminal: {set(controls)}"
    return output


# -- the escaping module ----------------------------------------------------------


def test_terminal_text_is_inert_markup_and_has_no_controls():
    assert for_terminal(MARKUP) == "\\[bold red]x\\[/]"
    assert for_terminal(UNBALANCED) == "\\[/]"
    assert for_terminal(CLEAR_SCREEN) == "wiped"
    assert for_terminal(OSC8_LINK) == "click me"
    assert for_terminal(PIPE_NEWLINE) == "pipe|agent new | row"
    assert for_terminal(BIDI) == "admingnp.exe"
    assert for_terminal("C1\x9b31mred \x9d8;;x\x9cok") == "C1red ok"
    assert for_terminal("A" * 10_000_000, limit=50) == "A" * 49 + "…"
    assert for_terminal(None) == "" and for_terminal(3) == "3"


def test_markdown_cell_stays_one_cell_of_one_row_and_renders_as_text():
    cell = for_markdown(PIPE_NEWLINE + " `code` [x](javascript:alert(1)) " + SCRIPT)
    assert "\n" not in cell
    assert not re.search(r"(?<!\\)[|`<>\[\]]", cell)
    assert for_markdown("mass_ratio") == "mass_ratio"  # ordinary names are unchanged
    assert for_markdown_code("a`b") == "``a`b``" and for_markdown_code("x") == "`x`"


def test_html_text_and_links():
    assert for_html(SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert for_html("a\x00b\x1b[2Jc\nd") == "abc\nd"
    assert for_html('"q"') == "&quot;q&quot;"
    for bad in ("javascript:alert(1)", " JaVa\tScRiPt:alert(1)", "\x01javascript:x",
                "data:text/html,x", "vbscript:x", "file:///etc/passwd", "", None, 3):
        assert safe_href(bad) is None, bad
    assert safe_href("https://example.org/a?b=<c>") == "https://example.org/a?b=&lt;c&gt;"
    assert safe_href("http://x.org") == "http://x.org"
    assert safe_href("transcripts/ep-1.html") == "transcripts/ep-1.html"
    assert safe_href(" runs/my run/t.html\n") == "runs/my%20run/t.html"
    assert safe_href("java script:alert(1)") is None  # without its spaces, a scheme: refused
    assert strip_controls("a\r\nb", keep_newlines=True) == "a\nb"


# -- the commands -----------------------------------------------------------------


def test_leaderboard_table_shows_hostile_names_inertly(hostile_run):
    output = _finished_cleanly(_discoverygym("leaderboard", str(hostile_run), "--by", "agent"))
    for shown in (MARKUP, UNBALANCED, "wiped", "click me", SCRIPT, "admingnp.exe"):
        assert shown in output, shown
    assert "javascript" not in output  # the hyperlink's target went with its sequence
    assert len(output) < 100_000, "a 10 MB name is cut, not printed"


@pytest.mark.slow  # a CLI in a subprocess over 20 MB of records
def test_leaderboard_markdown_has_one_row_per_group(hostile_run):
    done = _discoverygym("leaderboard", str(hostile_run), "--by", "agent", "--format",
                         "markdown")
    output = _finished_cleanly(done)
    lines = done.stdout.strip().splitlines()
    groups = leaderboard([str(hostile_run)], ["agent"])
    assert len(lines) == 2 + len(groups)
    n_columns = len(groups[0])
    for line in lines:
        assert line.startswith("|") and line.endswith("|")
        assert len(re.findall(r"(?<!\\)\|", line)) == n_columns + 1, line[:300]
    assert "<script>" not in output and len(output) < 100_000


def test_a_csv_cell_never_starts_a_spreadsheet_formula(tmp_path):
    """An agent named "=HYPERLINK(...)" is a formula when the csv opens in a spreadsheet;
    through the leaderboard it arrives as text (a leading apostrophe), numbers untouched."""
    formulas = ["=HYPERLINK(\"http://evil\",\"x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
                "\t=1+1"]
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text(
        "".join(json.dumps(_record(agent, score=-0.5)) + "\n" for agent in formulas))
    import csv
    import io

    from discoverygym.run.leaderboard import format_rows
    rows = list(csv.DictReader(io.StringIO(format_rows(
        leaderboard([str(run)], ["agent"]), "csv"))))
    assert len(rows) == len(formulas)
    assert all(row["agent"].startswith("'") for row in rows), rows
    assert {row["mean_score"] for row in rows} == {"-0.5"}
    assert for_csv(-0.5) == -0.5 and for_csv("plain") == "plain"


@pytest.mark.slow  # a CLI in a subprocess over 20 MB of records
def test_leaderboard_csv_has_no_controls(hostile_run):
    _finished_cleanly(_discoverygym("leaderboard", str(hostile_run), "--by", "agent",
                                    "--format", "csv"))


def test_leaderboard_counts_only_json_true_as_passed(hostile_run):
    by_agent = {r["agent"]: r for r in leaderboard([str(hostile_run)], ["agent"])}
    assert by_agent["types"]["n_passed"] == 0 and by_agent["types"]["pass_rate"] == 0
    assert "torn" not in by_agent  # a torn line is no record
    assert by_agent["deep"]["n"] == 1  # DuckDB reads deep JSON; the record counts


@pytest.mark.slow  # a CLI in a subprocess over 20 MB of records
def test_report_of_a_hostile_run_is_inert(hostile_run, tmp_path):
    out = tmp_path / "report.html"
    _finished_cleanly(_discoverygym("report", str(hostile_run), "-o", str(out)))
    page = out.read_text(encoding="utf-8")
    hrefs = re.findall(r'href\s*=\s*"([^"]*)"', page, flags=re.IGNORECASE)
    assert not [h for h in hrefs if re.match(r"\s*(javascript|data|vbscript):", h, re.I)]
    assert "<script" not in page.lower()
    assert "&lt;script&gt;" in page  # shown as text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", page)
    assert MARKUP in page
    assert len(page) < 2_000_000, "10 MB strings are cut"
    assert "are not records" in page  # the unreadable lines are said, not hidden


def test_run_resume_prints_hostile_task_ids_inertly(tmp_path):
    """`run --resume` summarises the records already in --out, so a records.jsonl put
    there by someone else reaches the final table."""
    out = tmp_path / "run"
    out.mkdir()
    hostile = {"suite": "toy", "task_id": UNBALANCED + CLEAR_SCREEN, "seed": 0,
               "options": {"budget": 10}, "agent": "bisect", "model": None,
               "passed": False, "score": 0.0, "details": {}, "usage": {"observations": 1}}
    (out / "records.jsonl").write_text(json.dumps(hostile) + "\n")
    done = _discoverygym("run", "toy", "--agent", "bisect", "--out", str(out), "--resume",
                         "--executor", "serial", "--quiet",
                         DISCOVERYGYM_PLUGINS="toy_suite")
    output = _finished_cleanly(done)
    assert UNBALANCED + "wiped" in output


def test_package_summary_of_hostile_records_is_inert(tmp_path):
    (tmp_path / "records.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"suite": "packages", "task_id": UNBALANCED, "value": 0.5,
         "details": {"domain": MARKUP + OSC8_LINK, "completed": True, "g_clipped": 0.2}},
        {"suite": "packages", "task_id": "wrong types", "value": "big",
         "details": "not a dict"},
        {"suite": "packages", "task_id": "huge", "value": 1,
         "details": {"completed": True, "domain": ["a", "list"]}},
    ]) + "\n")
    output = _finished_cleanly(_discoverygym("package", "summary", str(tmp_path)))
    assert MARKUP + "click me" in output


# -- the leaderboard at 80 columns ------------------------------------------------


@pytest.fixture(scope="module")
def ordinary_runs(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("ordinary") / "run"
    run.mkdir()
    records = []
    for suite, agent, model in (("stargazer", "expert-adaptive", None),
                                ("gravity", None, "openai/gpt-4o-mini-2024-07-18"),
                                ("packages", "baseline", None)):
        for seed in range(3):
            records.append(_record(agent, suite=suite, model=model, seed=seed,
                                   passed=seed != 1, score=0.25 * seed))
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def _table_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def test_leaderboard_reads_at_80_columns(ordinary_runs):
    output = _finished_cleanly(_discoverygym("leaderboard", str(ordinary_runs), columns=80))
    lines = _table_lines(output)
    assert max(len(line) for line in lines) <= 80
    assert "…" not in output, "no header or cell is cut"
    # the header's rows, down to the rule under them: a header wraps at its spaces
    top = next(i for i, line in enumerate(lines) if "suite" in line)
    bottom = next(i for i, line in enumerate(lines) if i > top and line.startswith("┡"))
    header = [[cell.strip() for cell in line.strip("┃").split("┃")] for line in lines[top - 1:bottom]]
    columns = [" ".join(w for row in header if k < len(row) and (w := row[k]))
               for k in range(max(len(row) for row in header))]
    for label in ("suite", "agent", "model", "pass rate", "± s.e.", "mean score"):
        assert label in columns, (label, columns)
    body = "".join(lines)
    for figure in ("0.667", "0.272"):  # figures never fold
        assert figure in body
    # the table closes on the right: nothing was cropped at the terminal's edge (the
    # caption under it names the figures left out)
    table = lines[1:next(i for i, line in enumerate(lines) if line.startswith("└")) + 1]
    assert all(line.rstrip()[-1] in "┓┃┩│┘" for line in table)


@pytest.mark.slow  # four runs of the CLI in a subprocess
def test_leaderboard_columns_option(ordinary_runs):
    wide = _finished_cleanly(_discoverygym("leaderboard", str(ordinary_runs), "--columns",
                                           "all", columns=250))
    assert "mean wall s" in wide and "total usd" in wide and "…" not in wide
    narrow = _finished_cleanly(_discoverygym("leaderboard", str(ordinary_runs), "--columns",
                                             "all", columns=80))
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "not shown at 80 columns" in narrow and "mean wall s" in narrow
    keys = ["suite", "agent", "model"]
    picked = choose_columns(leaderboard([str(ordinary_runs)], keys), keys, "n,total_usd")
    assert list(picked[0]) == ["suite", "agent", "model", "n", "total_usd"]
    bad = _discoverygym("leaderboard", str(ordinary_runs), "--columns", "n,bogus")
    assert bad.returncode == 1 and "Traceback" not in bad.stdout + bad.stderr
    assert "bogus" in bad.stdout and len(bad.stdout.strip().splitlines()) <= 2
    bad = _discoverygym("leaderboard", str(ordinary_runs), "--format", "xml")
    assert bad.returncode == 1 and "Traceback" not in bad.stdout + bad.stderr
    assert len(bad.stdout.strip().splitlines()) == 1


def test_calibration_markdown_keeps_a_hostile_task_id_in_its_cell():
    """`calibrate --out table.md` writes task ids a package folder chose."""
    from discoverygym.calibrate import AgentRate, CalibrationResult, TaskCalibration

    roles = {"oracle": ["bisect"], "baselines": [], "no_science": [], "trivial": []}
    hostile = "a|b\n| forged | row |`x`"
    result = CalibrationResult(
        suite="toy", seeds=[0], roles=roles, command="discoverygym calibrate toy",
        tasks=[TaskCalibration(hostile, 0.0, {"bisect": AgentRate(1, 0)}, "too hard",
                               "best oracle 0% < 80%")],
        run_dirs={}, infrastructure_failures=[], elapsed_s=0.0)
    lines = result.to_markdown().splitlines()
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 3  # header, rule, the one task
    assert len(re.findall(r"(?<!\\)\|", rows[2])) == len(re.findall(r"\|", rows[0]))
    flagged = next(line for line in lines if line.startswith("- "))
    assert flagged.startswith("- `` a|b | forged | row |`x` ``: too hard")


@pytest.mark.parametrize("command", [["leaderboard"], ["report"]])
def test_a_records_file_that_never_ends_is_refused_not_read(tmp_path, command):
    """A FIFO (or a link to /dev/zero) named records.jsonl would hang a reader."""
    fifo_run, device_run = tmp_path / "fifo", tmp_path / "device"
    fifo_run.mkdir()
    device_run.mkdir()
    os.mkfifo(fifo_run / "records.jsonl")
    (device_run / "records.jsonl").symlink_to("/dev/zero")
    for run in (fifo_run, device_run):
        done = _discoverygym(*command, str(run), timeout_s=60)
        assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
        assert "records.jsonl" in done.stdout
