"""`discoverygym tpbench ...`: a Typer sub-app (mounted by the main CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ...core.escape import for_terminal
from ...report.markers import MarkerError, write_block
from .check import check_problems, count_table
from .importer import write_problem_files
from .problem import ProblemError, builtin_problem_dir, load_problems

tpbench_app = typer.Typer(help="tpbench tools: check and import problem files.",
                          no_args_is_help=True,
                          add_completion=False)
console = Console()


@tpbench_app.callback()
def _group() -> None:
    """tpbench tools."""


def _fmt_diff(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}"


@tpbench_app.command("check")
def check_cmd(
    directory: Annotated[Path | None, typer.Argument(
        help="Directory of problem files (default: the shipped set).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
    table: Annotated[bool, typer.Option(
        "--table", help="Only print the Markdown table of problems per level and domain "
                        "(no checks run).")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Fail a problem without an independent check or with fewer wrong "
                         "answers than its level asks (3 at levels 3-5).")] = False,
    only: Annotated[str | None, typer.Option(
        help="Check only these problem ids (comma separated).")] = None,
    skip_independent: Annotated[bool, typer.Option(
        "--skip-independent", help="Do not run the independent checks.")] = False,
    workers: Annotated[int, typer.Option(min=1, max=32,
                                         help="Problems checked in parallel.")] = 2,
    readme: Annotated[Path | None, typer.Option(
        help="With --table: also write the table into this file between its "
             "<!-- tpbench-problems:begin --> and <!-- tpbench-problems:end --> lines.")]
        = None,
) -> None:
    """Validate problem files; run each reference through its own tests, each independent
    check against the reference (within the check's tolerance) and each wrong answer
    through the verifier (it must fail). Exits 1 if any file fails."""
    directory = directory or builtin_problem_dir()
    if table:
        try:
            counts = count_table(load_problems(directory))
            typer.echo(counts)
            if readme is not None:
                write_block(readme, "tpbench-problems", counts)
        except (ProblemError, OSError, MarkerError) as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(1) from exc
        return
    chosen = {s.strip() for s in only.split(",") if s.strip()} if only else None
    report = check_problems(directory, workers=workers, independent=not skip_independent,
                            strict=strict, only=chosen)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print_report(report)
    raise typer.Exit(0 if report["ok"] else 1)


def _print_report(report: dict) -> None:
    if report.get("error") and not report["problems"]:  # nothing was checked: no table
        console.print(f"[red]error:[/red] {for_terminal(report['error'], 2000)}")
        return
    table = Table(title=f"tpbench check: {report['n_ok']}/{report['n_files']} ok")
    for col in ("problem", "L", "tests", "reference", "independent check",
                "wrong answers: caught k/n, rel. diff min..max", "problems"):
        table.add_column(col)
    for p in report["problems"]:
        ind = p["independent_check"]
        ind_text = "-" if ind is None else (
            f"error ({ind['duration_s']:.1f} s)" if ind["error"] else
            f"{'agrees' if ind['agreed'] else 'DISAGREES'} "
            f"(max {_fmt_diff(ind['max_rel_diff'])}, {ind['duration_s']:.1f} s)")
        wrong_text = "\n".join(
            f"{'' if w['rejected'] else 'PASSES '}{w['n_rejecting']}/{w['n_tests']} "
            f"{_fmt_diff(w['min_rel_diff'])}..{_fmt_diff(w['max_rel_diff'])}"
            for w in p["wrong_answers"]) or "-"
        table.add_row(for_terminal(p["id"] or Path(p["file"]).name),
                      for_terminal(p["level"] or "-"), str(p["n_tests"]),
                      for_terminal(p["reference_verdict"]), ind_text, wrong_text,
                      for_terminal("; ".join(p["problems"] + p["warnings"]) or "ok", 2000))
    console.print(table)
    totals = report.get("totals")
    if totals:
        console.print(
            f"reference correct {totals['reference_correct']}/{report['n_files']}; "
            f"independent checks agree {totals['independent_agree']}/"
            f"{totals['independent_checks']}; wrong answers rejected "
            f"{totals['wrong_rejected']}/{totals['wrong_answers']}")
    if report.get("error"):
        console.print(f"[red]error:[/red] {for_terminal(report['error'], 2000)}")


@tpbench_app.command("import")
def import_cmd(
    table: Annotated[Path, typer.Argument(help="A TPBench-format table: .json, .jsonl, .csv "
                                                "or .parquet.")],
    out_dir: Annotated[Path, typer.Argument(help="Directory to write the problem files to.")],
    sidecar: Annotated[Path | None, typer.Option(
        help="Sidecar with argument ranges and test settings (default: "
             "<table>.sidecar.yaml beside the table).")] = None,
) -> None:
    """Convert a published-format table into problem files (one YAML per row)."""
    try:
        written = write_problem_files(table, out_dir, sidecar)
    except ProblemError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    for path in written:
        typer.echo(str(path))
