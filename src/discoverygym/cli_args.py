"""What every command line of the package shares: the console and the reading of suite
options given after a suite's name. The main CLI (`cli.py`) and the doors' own command
groups (`adapters/*/cli.py`) both use it, so neither has to import the other."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console

console = Console()


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
