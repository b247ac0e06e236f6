"""`discoverygym package ...`: check, scaffold and serve task packages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .report import aggregate_table

package_app = typer.Typer(help="Task packages (NatureBench layout): check, new, serve, "
                          "summary, validate.",
                          no_args_is_help=True)
console = Console()


@package_app.command("check")
def check_cmd(
    directory: Annotated[Path, typer.Argument(help="A package, or a folder of packages.")],
    static_only: Annotated[bool, typer.Option(help="Skip running the evaluator.")] = False,
    require_split: Annotated[bool, typer.Option(
        help="Fail a package without a development/evaluation split.")] = False,
):
    """Static and dynamic checks; exits 1 if any package breaks a rule."""
    from .check import check_package, errors
    from .package import find_packages

    roots = find_packages(directory) if directory.is_dir() else []
    if not roots:
        console.print(f"[red]error:[/red] no package (metadata.json) under {directory}")
        raise typer.Exit(2)
    failed = 0
    for root in roots:
        findings = check_package(root, dynamic=not static_only, require_split=require_split)
        if errors(findings):
            failed += 1
            console.print(f"[red]FAIL[/red] {root.name}")
            for f in findings:
                console.print(f"  {escape(str(f))}")
        else:
            console.print(f"[green]ok[/green]   {root.name}")
            for f in findings:  # warnings only
                console.print(f"  [yellow]{escape(str(f))}[/yellow]")
    raise typer.Exit(1 if failed else 0)


@package_app.command("new")
def new_cmd(
    name: Annotated[str, typer.Argument(help="Package id (folder name).")],
    parent: Annotated[Path, typer.Option(help="Where to create it.")] = Path("."),
):
    """Scaffold a package in the published layout."""
    from .scaffold import scaffold

    try:
        root = scaffold(name, parent)
    except FileExistsError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"created {root}; fill in the TODOs, then run "
                  f"`discoverygym package check {root}`")


@package_app.command("summary")
def summary_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of the packages suite.")],
    naturebench: Annotated[Path | None, typer.Option(
        help="Also write a NatureBench leaderboard submission into this new folder "
             "(submission.yaml, results.csv, raw-results/) and print its figures.")] = None,
    model: Annotated[str | None, typer.Option(help="submission.yaml model.")] = None,
    agent: Annotated[str | None, typer.Option(help="submission.yaml agent.")] = None,
    organization: Annotated[str | None, typer.Option(
        help="submission.yaml organization.")] = None,
    url: Annotated[str | None, typer.Option(help="submission.yaml url.")] = None,
    contact: Annotated[str | None, typer.Option(help="submission.yaml contact.")] = None,
):
    """Print Surpass, Match, mean and median g, completion, per domain, buckets, and
    NatureBench's own figures (SR, CR, median g over valid tasks, per domain)."""
    from ...run import read_records
    from .suite import PackagesSuite

    records = [r for r in read_records(run_dir / "records.jsonl")
               if r.get("suite") == "packages"] if (run_dir / "records.jsonl").exists() else []
    if not records:
        console.print(f"[red]error:[/red] no packages records in {run_dir}")
        raise typer.Exit(2)
    console.print(aggregate_table(PackagesSuite().summarize(records), f"packages · {run_dir}"))
    _naturebench_summary(records, naturebench, {
        "model": model, "agent": agent, "organization": organization, "url": url,
        "contact": contact})


def _naturebench_summary(records: list, out: Path | None, fields: dict) -> None:
    """NatureBench's figures for the run; with `out`, the submission written there."""
    from .naturebench import SubmissionError, case_result, naturebench_figures, write_submission

    try:
        if out is None:
            figures = naturebench_figures([case_result(r) for r in records])
        else:
            figures = write_submission(records, out, {k: v for k, v in fields.items() if v})
    except (SubmissionError, OSError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    o = figures["overall"]

    def show(v: float | None, pct: bool = False) -> str:
        return "n/a" if v is None else (f"{v:.2f}%" if pct else f"{v:.6f}")

    console.print(f"NatureBench figures ({figures['metric_version']}, "
                  f"{o['task_count']} tasks): SR {show(o['score_rate'], True)}, "
                  f"CR {show(o['completion_rate'], True)}, "
                  f"Match-SOTA {show(o['match_sota'], True)}, "
                  f"Surpass-SOTA {show(o['surpass_sota'], True)}, "
                  f"mean g (all) {show(o['mean_g_all'])}, "
                  f"median g (all) {show(o['median_g_all'])}, "
                  f"median g (valid) {show(o['median_g_valid'])}")
    for domain, d in figures["domains"].items():
        console.print(f"  {escape(domain)}: {d['task_count']} tasks, SR "
                      f"{show(d['score_rate'], True)}, CR {show(d['completion_rate'], True)}, "
                      f"mean g (all) {show(d['mean_g_all'])}, median g (valid) "
                      f"{show(d['median_g_valid'])}")
    if out is None:
        return
    console.print(f"submission: {out} (fill in submission.yaml's url and contact; check "
                  "with their validate_submission.py --case-metadata "
                  f"{out / 'case_metadata.csv'})")


@package_app.command("validate")
def validate_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A finished run of the packages suite.")],
    grader_model: Annotated[str | None, typer.Option(
        help="Inspect model for the optional grader, e.g. openai/gpt-4o.")] = None,
    timeout_s: Annotated[float, typer.Option(help="Seconds per grader reply.")] = 120.0,
):
    """Validity checks on a finished run (deterministic, then the optional grader);
    writes validity.json and prints the aggregates with invalid runs at g = -1."""
    from .validity import inspect_grader, validate_run

    grader = inspect_grader(grader_model) if grader_model else None
    try:
        report = validate_run(run_dir, grader, timeout_s=timeout_s)
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    for v in report["verdicts"]:
        why = v.get("reason") or v.get("error") or ""
        console.print(f"{v['outcome']:<21} {v['task_id']}  {escape(why[:200])}")
    console.print("outcomes: " + ", ".join(f"{k} {n}" for k, n in report["counts"].items()))
    console.print(aggregate_table(report["aggregate_valid_only"],
                                  "aggregates, invalid runs counted as g = -1"))
    console.print(f"validity: {run_dir / 'validity.json'}")


@package_app.command("serve")
def serve_cmd(
    package: Annotated[Path, typer.Argument(help="A package directory.")],
    output_dir: Annotated[Path, typer.Option(help="The agent's output directory.")],
    log: Annotated[Path, typer.Option(help="Attempt log (SQLite); reused on restart.")] =
        Path("attempts.sqlite"),
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 0,
    token: Annotated[str | None, typer.Option(help="Bearer token (default: a new random one).")]
        = None,
):
    """Run the evaluation server for one package on 127.0.0.1."""
    import uvicorn

    from .package import load_package
    from .server import create_app, new_token
    from .service import EvaluationService

    token = token or new_token()
    service = EvaluationService(load_package(package), output_dir, log)
    console.print(f"token: {token}")
    uvicorn.run(create_app(service, token), host="127.0.0.1", port=port, log_level="info")
