"""`discoverygym key new` and `discoverygym verify RUN`: the commit-then-reveal of a keyed
evaluation (core/keys.py holds the key, run/verify.py the replay)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from .cli_args import console

key_app = typer.Typer(help="Keys for held-out draws: a key keys every draw of a run, so "
                           "nobody without it can rebuild an episode.",
                      no_args_is_help=True, add_completion=False)


@key_app.command("new")
def key_new(out: Annotated[Path, typer.Option(
        help="Where to write the key (a new file, readable by its owner only).")]
        = Path("discoverygym.key")):
    """Write a fresh key and print its id and commitment (publish the commitment before
    the evaluation; reveal the key after it, for `discoverygym verify`)."""
    from .core.keys import new_key, write_key_file

    key = new_key()
    try:
        write_key_file(out, key)
    except FileExistsError:
        console.print(f"[red]error:[/red] {escape(str(out))} exists; a key file is never "
                      "overwritten")
        raise typer.Exit(1) from None
    except OSError as exc:
        console.print(f"[red]error:[/red] cannot write {escape(str(out))}: "
                      f"{escape(exc.strerror or str(exc))}")
        raise typer.Exit(1) from None
    typer.echo(f"key file:   {out}")
    typer.echo(f"key id:     {key.id}")
    typer.echo(f"commitment: {key.commitment}")


def verify(
    run: Annotated[Path, typer.Argument(help="A run directory (or its records.jsonl).")],
    key_file: Annotated[Path | None, typer.Option(
        help="The revealed key of a keyed run (default: DISCOVERYGYM_KEY or "
             "DISCOVERYGYM_KEY_FILE; none for public draws).")] = None,
    commitment: Annotated[str | None, typer.Option(
        help="The commitment published before the evaluation: the key must match it.")]
        = None,
    plan_digest: Annotated[str | None, typer.Option(
        help="The plan digest published before the evaluation: run.json's plan must "
             "have it.")] = None,
):
    """Hold a run to the plan in its run.json and replay every record: each planned
    episode must have exactly one record, drawn with the run's key, whose answer,
    truth, passed, score, metric value and labels (world, protocol, metric, threshold)
    replay (numbers to 1e-9 relative). Writes
    RUN/verified.json; exit 0 only when every planned episode is confirmed."""
    from .core.keys import BadKey, resolve_key
    from .run.verify import ACCEPTED, RunRefused, verify_run, write_verified

    run_dir = run.parent if run.name == "records.jsonl" and not run.is_dir() else run
    try:
        key = resolve_key(key_file)
        report = verify_run(run_dir, key, commitment=commitment, pinned_digest=plan_digest,
                            key_given=key_file is not None or commitment is not None)
    except (BadKey, RunRefused) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    table = Table(title=f"verify {escape(str(run_dir))}")
    for column in ("line", "episode", "verdict", "detail"):
        table.add_column(column)
    for v in report.verdicts:
        style = "green" if v.status in ACCEPTED else "red"
        table.add_row(str(v.line or "–"), escape(v.episode),
                      f"[{style}]{escape(v.status)}[/{style}]", escape(v.detail))
    console.print(table)
    against = (f"key {report.key_id}, commitment {report.commitment}" if report.key_id
               else "public draws (no key)")
    console.print(f"{report.summary_line()}", soft_wrap=True)
    # run.json is the participant's file: a plan rewritten whole (options, episodes and
    # digest) verifies as the run it describes; only the published digest pins it
    pinned = ("" if plan_digest is not None else " (plan not pinned: compare its digest "
              "with the published one, or give --plan-digest)")
    console.print(f"plan {report.plan_digest}{pinned}; {against}", soft_wrap=True)
    try:
        note = write_verified(report)
    except OSError as exc:
        console.print(f"[yellow]warning:[/yellow] cannot write verified.json: "
                      f"{escape(exc.strerror or str(exc))}", soft_wrap=True)
    else:
        console.print(f"{'verified' if report.verified else 'rejected'}: "
                      f"{escape(str(note))}", soft_wrap=True)
    if not report.verified:
        raise typer.Exit(1)
