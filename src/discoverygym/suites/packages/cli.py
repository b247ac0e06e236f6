"""`discoverygym package ...`: check, scaffold and serve task packages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ...core.escape import for_terminal
from .report import aggregate_table

package_app = typer.Typer(help="Task packages (NatureBench layout): check, new, summary, "
                          "validate, serve; build one from a record; generate, "
                          "verify-release and calibrate-generated for NatureGym's families.",
                          no_args_is_help=True)
console = Console()


@package_app.command("check")
def check_cmd(
    directory: Annotated[Path, typer.Argument(help="A package, or a folder of packages.")],
    static_only: Annotated[bool, typer.Option(help="Skip running the evaluator.")] = False,
    require_split: Annotated[bool, typer.Option(
        help="Fail a package without a development/evaluation split.")] = False,
    record: Annotated[Path | None, typer.Option(
        help="The package's NatureGym record: adds the firewall derived from it.")] = None,
):
    """Static and dynamic checks; exits 1 if any package breaks a rule."""
    from ...naturegym.format.check import check_package, errors
    from ...naturegym.format.package import find_packages

    roots = find_packages(directory) if directory.is_dir() else []
    if not roots:
        console.print(f"[red]error:[/red] no package (metadata.json) under {directory}")
        raise typer.Exit(1)
    record_check = _record_firewall(record, roots) if record is not None else None
    failed = 0
    for root in roots:
        findings = check_package(root, dynamic=not static_only, require_split=require_split)
        if record_check is not None and root.name == record_check[0]:
            findings += record_check[1](root)
        if errors(findings):
            failed += 1
            console.print(f"[red]FAIL[/red] {root.name}")
            for f in findings:
                console.print(f"  {for_terminal(f, 2000)}")
        else:
            console.print(f"[green]ok[/green]   {root.name}")
            for f in findings:  # warnings only
                console.print(f"  [yellow]{for_terminal(f, 2000)}[/yellow]")
    raise typer.Exit(1 if failed else 0)


def _record_firewall(record_path: Path, roots: list[Path]):
    """(package name, root -> findings) for `package check --record`; a bad record or one
    that names none of the packages is a one-line error."""
    from ...naturegym.firewall import record_firewall_findings
    from ...naturegym.record import RecordError, load_record

    try:
        record = load_record(record_path)
    except RecordError as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    if record.id not in {r.name for r in roots}:
        console.print(f"[red]error:[/red] the record is for {for_terminal(repr(record.id))}, which is not "
                      "among the packages checked")
        raise typer.Exit(1)
    return record.id, lambda root: record_firewall_findings(record, root)


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
        raise typer.Exit(1) from exc
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
    from ...core.record import read_records
    from .suite import PackagesSuite

    records = [r for r in read_records(run_dir / "records.jsonl")
               if r.get("suite") == "packages"] if (run_dir / "records.jsonl").exists() else []
    if not records:
        console.print(f"[red]error:[/red] no packages records in {for_terminal(run_dir, 2000)}")
        raise typer.Exit(1)
    console.print(aggregate_table(PackagesSuite().summarize(records), f"packages · {for_terminal(run_dir, 2000)}"))
    _naturebench_summary(records, naturebench, {
        "model": model, "agent": agent, "organization": organization, "url": url,
        "contact": contact})


def _naturebench_summary(records: list, out: Path | None, fields: dict) -> None:
    """NatureBench's figures for the run; with `out`, the submission written there."""
    from .naturebench import SubmissionError, case_result, naturebench_figures, write_submission

    try:
        if out is None:  # figures only: a record NatureBench could not name is left out
            cases, unnamed = [], 0
            for record in records:
                try:
                    cases.append(case_result(record))
                except SubmissionError:
                    unnamed += 1
            if unnamed:
                console.print(f"NatureBench figures leave out {unnamed} record(s) whose task id "
                              "is not a plain case id")
            figures = naturebench_figures(cases)
        else:
            figures = write_submission(records, out, {k: v for k, v in fields.items() if v})
    except (SubmissionError, OSError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
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
        console.print(f"  {for_terminal(domain)}: {d['task_count']} tasks, SR "
                      f"{show(d['score_rate'], True)}, CR {show(d['completion_rate'], True)}, "
                      f"mean g (all) {show(d['mean_g_all'])}, median g (valid) "
                      f"{show(d['median_g_valid'])}")
    if out is None:
        return
    console.print(f"submission: {for_terminal(out, 2000)} (fill in submission.yaml's url and contact; check "
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
        raise typer.Exit(1) from exc
    for v in report["verdicts"]:
        why = v.get("reason") or v.get("error") or ""
        console.print(f"{for_terminal(v['outcome']):<21} {for_terminal(v['task_id'])}  "
                      f"{for_terminal(why)}")
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

    from ...naturegym.format.package import load_package
    from .server import create_app, new_token
    from .service import EvaluationService

    token = token or new_token()
    try:
        service = EvaluationService(load_package(package), output_dir, log)
    except (ValueError, OSError) as exc:  # PackageError is a ValueError: one line, not a trace
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}", soft_wrap=True)
        raise typer.Exit(1) from None
    console.print(f"token: {token}")
    uvicorn.run(create_app(service, token), host="127.0.0.1", port=port, log_level="info")


@package_app.command("build")
def build_cmd(
    record: Annotated[Path, typer.Argument(help="A NatureGym record (naturegym-record/1 JSON).")],
    work: Annotated[Path, typer.Option(help="Work folder: one subfolder per stage; reruns "
                                            "resume there.")],
    review_model: Annotated[str | None, typer.Option(
        help="Inspect model for the optional review, e.g. openai/gpt-4o.")] = None,
    review_timeout_s: Annotated[float, typer.Option(help="Seconds for the review.")] = 120.0,
    force: Annotated[bool, typer.Option(help="Rerun every stage.")] = False,
):
    """Build a task package from a record through gated stages (intake, filter, acquire,
    split, assemble, calibrate, review, seal); exits 1 when a gate fails."""
    from ...naturegym.build import BuildBusy, ForeignFolder, build
    from ...naturegym.record import RecordError
    from .validity import inspect_grader

    try:
        reviewer = inspect_grader(review_model) if review_model else None
        result = build(record, work, reviewer=reviewer, reviewer_name=review_model,
                       review_timeout_s=review_timeout_s, force=force)
    except (RecordError, BuildBusy, ForeignFolder, OSError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    except Exception as exc:  # noqa: BLE001 - e.g. an unknown review model: one line
        console.print(f"[red]error:[/red] {for_terminal(f'{type(exc).__name__}: {exc}', 300)}")
        raise typer.Exit(1) from exc
    for stage in result.stages:
        state = "ran" if stage.ran else "skipped"
        mark = "[green]ok[/green]  " if stage.passed else "[red]FAIL[/red]"
        console.print(f"{mark} {stage.name:<10} {state}")
        for f in stage.findings:
            line = "[{rule}] {path}: {message}".format(**f)
            console.print(f"     {for_terminal(line)}")
    if not result.passed:
        console.print(f"[red]stopped at {result.failed_stage}[/red]; fix the record and rerun")
        raise typer.Exit(1)
    console.print(f"sealed: {result.package}")


# ---- NatureGym generation (gymgen) -----------------------------------------------------
@package_app.command("generate")
def generate_cmd(
    family: Annotated[str | None, typer.Argument(help="Family name (see --list).")] = None,
    count: Annotated[int, typer.Option(help="How many packages.")] = 1,
    out: Annotated[Path | None, typer.Option(help="A new or empty folder for the release.")]
        = None,
    key_file: Annotated[Path | None, typer.Option(
        help="The secret key (default: DISCOVERYGYM_KEY / DISCOVERYGYM_KEY_FILE).")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Public development mode: draws anyone can rebuild from this seed.")] = None,
    start: Annotated[int, typer.Option(help="Index of the first package.")] = 0,
    work: Annotated[Path | None, typer.Option(
        help="Keep each package's build stages here (a rerun skips unchanged stages).")]
        = None,
    list_families: Annotated[bool, typer.Option(
        "--list", help="Print each family with its domain, task type and extra.")] = False,
):
    """Draw packages from the project's simulators (keyed, or public with --seed) and
    write them with a release manifest (key commitment, package digests)."""
    from ...core.keys import BadKey, resolve_key
    from ...naturegym.families import ExtraMissing, family_rows
    from ...naturegym.generate import GenerationError, generate, public_key

    if list_families:
        typer.echo("family\tdomain\ttask type\textra\tinstalled")
        for row in family_rows():
            typer.echo(f"{row['family']}\t{row['domain']}\t{row['task_type']}\t"
                       f"{row['extra']}\t{'yes' if row['installed'] else 'no'}")
        raise typer.Exit(0)
    try:
        if family is None or out is None:
            raise GenerationError("give a FAMILY and --out DIR (or --list)")
        if seed is not None and key_file is not None:
            raise GenerationError("--seed (public) and --key-file (secret) exclude each other")
        if seed is not None:
            key, mode = public_key(seed), "public"
        else:
            key, mode = resolve_key(key_file), "keyed"
            if key is None:
                raise GenerationError("no key: give --key-file K (see `discoverygym key new`), "
                                      "or --seed S for public development packages")
        data = generate(family, count, out, key, mode=mode, seed=seed, start=start,
                        work_dir=work, progress=_print_generated)
    except (GenerationError, ExtraMissing, BadKey, ValueError, OSError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from None
    console.print(f"{data['count']} {family} packages ({mode}) in {out}; manifest "
                  f"{out / 'release.json'}; key commitment {data['key_commitment']}")


def _print_generated(package) -> None:
    """One line per package, and one per gate that refused a draw (with its reason)."""
    console.print(f"{package.id}  {package.digest[:16]}")
    for redraw in package.redraws:
        console.print(for_terminal(f"  redrawn {', '.join(redraw.instances)} after the "
                                   f"{redraw.stage} gate: {redraw.reason}", 2000))


@package_app.command("verify-release")
def verify_release_cmd(
    directory: Annotated[Path, typer.Argument(help="A folder written by package generate.")],
    key_file: Annotated[Path | None, typer.Option(
        help="The revealed key (not needed for a public release).")] = None,
    commitment: Annotated[str | None, typer.Option(
        help="The key commitment published before the release was evaluated: the key "
             "and the manifest must both match it.")] = None,
):
    """Regenerate every package of a release from its key and compare byte for byte."""
    from ...core.keys import BadKey, read_key_file
    from ...naturegym.release import ReleaseMismatch, verify_release

    try:
        key = read_key_file(key_file) if key_file is not None else None
        data = verify_release(directory, key, commitment)
    except (ReleaseMismatch, BadKey, OSError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from None
    pinned = ", as given by --commitment" if commitment else ""
    console.print(f"ok: {data['count']} {data['family']} packages regenerated byte for "
                  f"byte ({data['mode']}, commitment {data['key_commitment'][:16]}..."
                  f"{pinned})")


@package_app.command("calibrate-generated")
def calibrate_generated_cmd(
    ctx: typer.Context,
    work_dir: Annotated[Path, typer.Option(help="Where packages and runs go (reused).")],
    families: Annotated[str, typer.Option(help="Comma-separated families (default all).")]
        = "",
    count: Annotated[int, typer.Option(help="Packages per family.")] = 20,
    seed: Annotated[int, typer.Option(help="Public seed of the generated packages.")] = 0,
    readme: Annotated[Path | None, typer.Option(
        help="Write the table between the naturegym:calibration markers of this file "
             "(with --families: only those families' rows, the others kept).")]
        = None,
    workers: Annotated[int, typer.Option(help="Parallel episodes.")] = 2,
    leak_draws: Annotated[int, typer.Option(
        help="Public draws of the leak gate (fewer than 200 never pass it).")] = 200,
):
    """Generate COUNT public packages per family, run the validity gates (leak, bound,
    zero, no-science) and `discoverygym calibrate packages` on them, and print (or
    write into a README) the figures."""
    from ...naturegym.calibration import (
        calibrate_families,
        markdown,
        merge_readme_rows,
        write_readme_block,
    )
    from ...naturegym.families import FAMILIES, ExtraMissing
    from ...naturegym.leak_gate import LeakGateUnavailable

    # The runner's calibrate comes from the command line that mounted this group (the
    # click context's obj, see cli.SUITE_COMMAND_SERVICES): no suite imports the runner.
    calibrate = ctx.obj.get("calibrate") if isinstance(ctx.obj, dict) else None
    if calibrate is None:
        console.print("[red]error:[/red] calibrate-generated runs through the discoverygym "
                      "command (`discoverygym package calibrate-generated`).")
        raise typer.Exit(1)
    names = [f.strip() for f in families.split(",") if f.strip()] or list(FAMILIES)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        console.print(f"[red]error:[/red] unknown family {unknown[0]!r}; families: "
                      f"{', '.join(FAMILIES)}")
        raise typer.Exit(1)
    try:
        figures = calibrate_families(names, count, seed, work_dir, calibrate=calibrate,
                                     workers=workers, leak_draws=leak_draws,
                                     log=lambda line: console.print(for_terminal(line, 2000)))
    except (LeakGateUnavailable, ExtraMissing) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from None
    command = (f"discoverygym package calibrate-generated --work-dir DIR --count {count} "
               f"--seed {seed}" + (f" --families {','.join(names)}" if families else "")
               + (f" --leak-draws {leak_draws}" if leak_draws != 200 else ""))
    block = markdown(figures, command)
    console.print(block)
    if readme is not None and families:
        merge_readme_rows(readme, block, names)
    elif readme is not None:
        write_readme_block(readme, block)
