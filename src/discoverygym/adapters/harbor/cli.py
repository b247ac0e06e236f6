"""`discoverygym export harbor SUITE OUT_DIR [suite options]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

export_app = typer.Typer(help="Write episodes in another framework's task format.",
                         no_args_is_help=True, add_completion=False)


@export_app.command("harbor", context_settings={"allow_extra_args": True,
                                                "ignore_unknown_options": True})
def harbor_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name (see `discoverygym list`).")],
    out_dir: Annotated[Path, typer.Argument(help="Folder for the task directories.")],
    oracle: Annotated[str | None, typer.Option(
        help="Scripted agent whose answer becomes solution/ (default: the suite's "
             "calibration oracle).")] = None,
    wheel: Annotated[Path | None, typer.Option(
        help="A discoverygym wheel to install in the verifier image (default: "
             "discoverygym==<this version> from the package index).")] = None,
    limit: Annotated[int | None, typer.Option(help="Export only the first N episodes.")] = None,
):
    """Export a suite's episodes as Harbor tasks. Suite options follow, as for `run`
    (e.g. `--protocol full-obs --tasks period --worlds A`)."""
    from ...cli_args import console
    from ...cli_args import parse_extra as _parse_extra
    from ...core import UnknownName, get_suite
    from .dataset import export_tasks

    try:
        options = get_suite(suite).parse_options(_parse_extra(list(ctx.args)))
        tasks = export_tasks(suite, out_dir, options=options, oracle=oracle, wheel=wheel,
                             limit=limit)
    except (UnknownName, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    files = sum(t.kind == "file" for t in tasks)
    passing = sum(bool(t.oracle_passed) for t in tasks)
    console.print(f"{len(tasks)} Harbor tasks in {out_dir}: {files} file tasks (oracle passes "
                  f"{passing} through the verifier), {len(tasks) - files} with live tools "
                  "in an MCP sidecar (need Docker)")
    for task in tasks:
        for note in task.notes:
            console.print(f"  {task.path.name}: {note}")
