"""`discoverygym tpbench ...`: a Typer sub-app (mounted by the main CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .check import check_problems
from .importer import write_problem_files
from .problem import ProblemError, builtin_problem_dir

tpbench_app = typer.Typer(help="tpbench tools: check and import problem files.",
                          no_args_is_help=True,
                          add_completion=False)
console = Console()


@tpbench_app.callback()
def _group() -> None:
    """tpbench tools."""


@tpbench_app.command("check")
def check_cmd(
    directory: Annotated[Path | None, typer.Argument(
        help="Directory of problem files (default: the shipped set).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Validate problem files and run each reference (and plausible wrong answer)
    through the problem's own tests. Exits 1 if any file fails."""
    report = check_problems(directory or builtin_problem_dir())
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        table = Table(title=f"tpbench check: {report['n_ok']}/{report['n_files']} ok")
        for col in ("file", "tests", "reference", "wrong", "problems"):
            table.add_column(col)
        for p in report["problems"]:
            table.add_row(Path(p["file"]).name, str(p["n_tests"]), str(p["reference_verdict"]),
                          str(p["wrong_verdict"]),
                          "; ".join(p["problems"] + p["warnings"]) or "ok")
        console.print(table)
        if report.get("error"):
            console.print(f"[red]error:[/red] {report['error']}")
    raise typer.Exit(0 if report["ok"] else 1)


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
