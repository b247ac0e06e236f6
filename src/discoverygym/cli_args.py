"""What every command line of the package shares: the console and the reading of suite
options given after a suite's name. The main CLI (`cli.py`) and the doors' own command
groups (`doors/*/cli.py`) both use it, so neither has to import the other."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from .core.seeds import ACCEPTED

console = Console()
err_console = Console(stderr=True)

#: The one `--seeds` of every command that plans episodes (run, calibrate, audit, the
#: Harbor export, the verifiers eval); core.seeds reads it, core.cross crosses with it.
SEEDS_HELP = (f"Seeds every case (task, options) is played with: {ACCEPTED}. "
              "Default: the suite's (`discoverygym options SUITE`).")
SeedsOption = Annotated[str | None, typer.Option("--seeds", help=SEEDS_HELP)]


def one_line_failure(exc: BaseException) -> str:
    """An environment failure as one line: a missing extra names the extra and how to
    install it; an OS error names the path and the cause."""
    from .core.extras import missing_module_message

    if isinstance(exc, ImportError):
        return missing_module_message(exc)
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot use{where}: {exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__


def parse_extra(args: list[str]) -> dict[str, str]:
    """`--key value` / `--key=value` pairs after the suite name, passed to the suite."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if not token.startswith("--"):
            raise typer.BadParameter(f"Unexpected argument {token!r}.")
        key = token[2:]
        if "=" in key:
            key, value = key.split("=", 1)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            value = args[i + 1]
            i += 1
        else:
            value = "true"
        out[key] = value
        i += 1
    return out


def episode_options(raw: dict[str, str]) -> dict[str, Any]:
    """Episode options from the command line; integer-looking values become ints."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        out[key.replace("-", "_")] = int(value) if value.lstrip("-").isdigit() else value
    return out


def key_or_exit(key_file: Any):
    """The key of `--key-file` or the environment (None: public draws); a bad key is one
    line and exit 1."""
    from .core.keys import BadKey, resolve_key

    try:
        return resolve_key(key_file)
    except BadKey as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
