"""`discoverygym export harbor SUITE OUT_DIR [suite options]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ...cli_args import SeedsOption

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
    key_file: Annotated[Path | None, typer.Option(
        help="Key the tasks with this key (default: DISCOVERYGYM_KEY or "
             "DISCOVERYGYM_KEY_FILE, else a fresh key for this export).")] = None,
    seeds: SeedsOption = None,
):
    """Export a suite's episodes as Harbor tasks. Suite options follow, as for `run`
    (e.g. `--protocol full-obs --tasks period --worlds A`)."""
    from ...cli_args import console
    from ...cli_args import parse_extra as _parse_extra
    from ...core import UnknownName, get_suite
    from ...core.keys import BadKey, new_key, resolve_key
    from ...core.seeds import parse_seeds
    from .dataset import export_tasks
    from .keyed import INDEX_NAME

    try:
        key = resolve_key(key_file) or new_key()
    except BadKey as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True)
        raise typer.Exit(1) from None
    try:
        options = get_suite(suite).parse_options(_parse_extra(list(ctx.args)))
        tasks = export_tasks(suite, out_dir, options=options, oracle=oracle, wheel=wheel,
                             limit=limit, key=key,
                             seeds=parse_seeds(seeds) if seeds is not None else None)
    except (UnknownName, ValueError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from exc
    files = sum(t.kind == "file" for t in tasks)
    passing = sum(bool(t.oracle_passed) for t in tasks)
    console.print(f"{len(tasks)} Harbor tasks in {out_dir}: {files} file tasks (oracle passes "
                  f"{passing} through the verifier), {len(tasks) - files} with live tools "
                  "in an MCP sidecar (need Docker)")
    console.print(f"keyed with {key.id} (commitment {key.commitment}); the key is in each "
                  f"task's tests/ only; names -> episodes: {out_dir / INDEX_NAME} (private)",
                  soft_wrap=True)
    for task in tasks:
        for note in task.notes:
            console.print(f"  {task.path.name}: {note}")


def mount(app: typer.Typer) -> None:
    """Add the `export` group to the `discoverygym` app."""
    app.add_typer(export_app, name="export")
