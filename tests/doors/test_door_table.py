"""One door table (discoverygym.doors.DOORS) names every door folder, and the command
line mounts every door's commands through it, without loading any door's framework."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from discoverygym.doors import DOORS
from testpaths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

DOORS_DIR = REPO / "src" / "discoverygym" / "doors"
#: The command (or group) each mounting door adds to `discoverygym`.
COMMANDS = {"mcp": "mcp", "openenv": "serve", "verifiers": "rl", "harbor": "export"}


def test_every_door_folder_is_a_row_and_every_row_a_folder():
    folders = {p.parent.name for p in DOORS_DIR.glob("*/__init__.py")} - {"shared"}
    assert folders == {door.name for door in DOORS}
    for door in DOORS:
        doc = (DOORS_DIR / door.name / "__init__.py").read_text()
        assert doc.startswith('"""'), f"doors/{door.name}/__init__.py says what it is"


def test_every_extra_a_door_names_exists():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for door in DOORS:
        assert door.extra is None or door.extra in extras, door


def test_each_mount_adds_the_doors_commands():
    import importlib

    for door in DOORS:
        if door.mount is None:
            continue
        app = typer.Typer()
        app.command("placeholder")(lambda: None)  # a group with one command stays a group
        module, _, function = door.mount.partition(":")
        getattr(importlib.import_module(module), function)(app)
        names = {c.name for c in app.registered_commands} | {
            g.name for g in app.registered_groups}
        assert COMMANDS[door.name] in names, (door, names)
    assert set(COMMANDS) == {d.name for d in DOORS if d.mount is not None}


def test_the_command_line_offers_every_mounted_door():
    from discoverygym.cli import app

    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in COMMANDS.values():
        assert f" {command} " in result.output, command


def test_the_command_line_loads_no_doors_framework():
    """Mounting imports each door's cli.py only: `discoverygym` starts without MCP,
    OpenEnv, verifiers, Inspect or Gymnasium installed."""
    code = ("import sys, discoverygym.cli; print(sorted(m for m in ('mcp', 'openenv', "
            "'verifiers', 'inspect_ai', 'gymnasium', 'uvicorn') if m in sys.modules))")
    # without plugins: another test module may have named the toy suite in the environment
    env = {k: v for k, v in os.environ.items() if k != "DISCOVERYGYM_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
