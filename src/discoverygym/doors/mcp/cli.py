"""`discoverygym mcp SUITE TASK --record FILE [episode options]` (the MCP SDK is
imported only when the command runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def mcp_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name.")],
    task: Annotated[str, typer.Argument(help="Task id.")],
    record: Annotated[Path, typer.Option(help="Where the record is written when the episode "
                                               "ends (never sent to the client).")],
    seed: Annotated[int, typer.Option(help="Episode seed.")] = 0,
    interpreter: Annotated[bool, typer.Option(help="Offer the sandboxed python tool.")] = True,
    key_file: Annotated[Path | None, typer.Option(
        help="Key the episode's draws (default: DISCOVERYGYM_KEY or DISCOVERYGYM_KEY_FILE, "
             "else public draws).")] = None,
):
    """Serve one episode over MCP on stdio (episode options follow, e.g. --world A
    --protocol budget-obs-100)."""
    import anyio

    from ...cli_args import console, episode_options, key_or_exit, parse_extra
    from ...core import EpisodeSpec, UnknownName
    from ...core.escape import for_terminal
    from .server import serve_stdio

    spec = EpisodeSpec(suite, task, seed, episode_options(parse_extra(ctx.args)),
                       key_or_exit(key_file))
    try:
        episode = spec.build()
    except (UnknownName, ValueError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    anyio.run(lambda: serve_stdio(episode, record, interpreter=interpreter))


def mount(app: typer.Typer) -> None:
    """Add `mcp` to the `discoverygym` app."""
    app.command("mcp", context_settings={"allow_extra_args": True,
                                         "ignore_unknown_options": True})(mcp_cmd)
