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
):
    """Replay every record of a run: rebuild its episode (with the key where the record
    names one), re-score the recorded answer and confirm truth, passed and score. Exit 1
    on any mismatch."""
    from .core.keys import BadKey, resolve_key
    from .run.verify import MISMATCH, KeyMismatch, verify_records

    path = run / "records.jsonl" if run.is_dir() else run
    if not path.is_file():
        console.print(f"[red]error:[/red] no records at {escape(str(path))}")
        raise typer.Exit(1)
    try:
        key = resolve_key(key_file)
        if commitment is not None and (key is None or key.commitment != commitment.strip()):
            raise KeyMismatch("the key does not match the published commitment")
        verdicts = verify_records(path, key)
    except (BadKey, KeyMismatch) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None
    table = Table(title=f"verify {escape(str(path))}")
    for column in ("line", "episode", "verdict", "detail"):
        table.add_column(column)
    for v in verdicts:
        style = {"ok": "green", MISMATCH: "red"}.get(v.status, "yellow")
        table.add_row(str(v.line), escape(v.episode), f"[{style}]{v.status}[/{style}]",
                      escape(v.detail))
    console.print(table)
    counts = {s: sum(v.status == s for v in verdicts) for s in ("ok", MISMATCH,
                                                              "not replayable")}
    console.print(f"{counts['ok']} confirmed, {counts[MISMATCH]} mismatched, "
                  f"{counts['not replayable']} not replayable")
    if counts[MISMATCH]:
        raise typer.Exit(1)
