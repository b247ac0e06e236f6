"""`discoverygym serve ...`: long-running servers that put a suite behind another
framework's protocol. The framework is imported only when its command runs, so the
command line starts without it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

serve_app = typer.Typer(help="Serve a suite's episodes to other frameworks (OpenEnv).",
                        no_args_is_help=True)

OPENENV_MISSING = ("the OpenEnv server needs the `openenv` package: pip install "
                   "'discoverygym[openenv]' in an environment of its own (openenv needs "
                   "mcp<2, the MCP door needs mcp 2; see docs/doors.md)")


def _names(listed: str) -> frozenset[str] | None:
    """'*' -> None (any); otherwise the comma-separated names, as options are spelled in
    Python (`world-seed` -> `world_seed`)."""
    if listed.strip() == "*":
        return None
    return frozenset(n.strip().replace("-", "_") for n in listed.split(",") if n.strip())


@serve_app.command("openenv", context_settings={"allow_extra_args": True,
                                                "ignore_unknown_options": True})
def serve_openenv(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name (see `discoverygym list`).")],
    task: Annotated[str | None, typer.Option(
        help="Default task id for a reset that names none (default: the suite's first).")] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port; the URL is printed).")] = 8000,
    max_sessions: Annotated[int, typer.Option(
        help="Concurrent WebSocket sessions, each with its own episode.")] = 8,
    max_steps: Annotated[int, typer.Option(
        help="Tool calls per episode before it ends without an answer.")] = 500,
    session_timeout: Annotated[float, typer.Option(
        help="Seconds before an idle session that no WebSocket holds (OpenEnv's HTTP "
             "session/create) is closed. A session a socket holds is never closed for "
             "being idle.")] = 60.0,
    records: Annotated[Path | None, typer.Option(
        help="Append every finished episode's record to this JSONL file.")] = None,
    send_record: Annotated[bool, typer.Option(
        help="Send the record (truth included) with the last observation.")] = True,
    client_options: Annotated[str, typer.Option(
        help="Episode options a client's reset may set, comma separated ('*': any; "
             "default none). A budget or a large simulation resolution is the "
             "operator's to give.")] = "",
    client_seeds: Annotated[bool, typer.Option(
        "--client-seeds", help="Training: the client chooses each reset's seed and may "
             "replay it (records say so). Default: evaluation, the server draws every "
             "seed from its key and plays each once.")] = False,
    key_file: Annotated[Path | None, typer.Option(
        help="Evaluation: the key seeds are drawn with (default DISCOVERYGYM_KEY or "
             "DISCOVERYGYM_KEY_FILE, else a fresh key).")] = None,
):
    """Serve SUITE as an OpenEnv environment: WebSocket sessions on /ws, one episode per
    reset. Episode options follow the suite name (e.g. --world A --protocol
    budget-obs-100); they are the defaults a client's reset `options` override."""
    from ...cli_args import episode_options as _episode_options
    from ...cli_args import parse_extra as _parse_extra
    from ...core import UnknownName
    from ...core.keys import BadKey, resolve_key

    try:
        from .server import build_app, serve
    except ImportError as exc:
        typer.echo(f"error: {OPENENV_MISSING} ({exc})", err=True)
        raise typer.Exit(1) from exc
    try:
        if client_seeds and key_file is not None:
            raise ValueError("--key-file draws evaluation seeds; --client-seeds lets the "
                             "client choose them. Give one.")
        key = None if client_seeds else resolve_key(key_file)
        app = build_app(suite, task, _episode_options(_parse_extra(list(ctx.args))),
                        max_sessions=max_sessions, max_steps=max_steps,
                        session_timeout_s=session_timeout, records=records,
                        send_record=send_record,
                        client_options=_names(client_options),
                        client_seeds=client_seeds, key=key)
    except (UnknownName, BadKey, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    draws = app.state.episode_draws
    mode = ("training: clients choose seeds" if client_seeds else
            f"evaluation: seeds drawn with {draws.key_id}")
    serve(app, host, port, lambda url: typer.echo(
        f"discoverygym OpenEnv server for {suite}: {url} (WebSocket {url}/ws; {mode})",
        err=False))


def mount(app: typer.Typer) -> None:
    """Add the `serve` group (`serve openenv`) to the `discoverygym` app."""
    app.add_typer(serve_app, name="serve")
