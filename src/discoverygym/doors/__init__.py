"""The doors: every way an agent or another framework reaches an episode, one folder
each, and the one table that mounts their commands on `discoverygym`.

A door imports `core/`, `run/` and `sandbox/`, never a suite's internals (the layering
contracts in pyproject.toml check it). Each folder has the same shape where it applies:
`__init__.py` (what the door is, in one docstring), `cli.py` (a `mount(app)` that adds
its commands), its server or environment module, and its own README when it has more to
say than docs/doors.md. What several doors share (the sandboxed `python` tool, the way a
record keeps the agent's python calls, the audit's attacks through that tool) is in
`shared/`. A new door is a new folder and a new row of DOORS; nothing else changes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Door:
    """One row of the door table."""

    name: str
    #: the package extra its framework comes from (None: nothing beyond the base install)
    extra: str | None
    #: "module:function" that adds the door's commands to the `discoverygym` app, imported
    #: when the command line starts, so it must not import the framework itself; None for
    #: a door reached otherwise (the entry says how)
    mount: str | None
    #: how an agent or a framework comes in, one line
    entry: str


DOORS: tuple[Door, ...] = (
    Door("inspect", "inspect", None,
         "`discoverygym run SUITE --model M` (through cli.py's `run`), "
         "`inspect eval discoverygym/SUITE`"),
    Door("mcp", "mcp", "discoverygym.doors.mcp.cli:mount",
         "`discoverygym mcp SUITE TASK --record FILE`: one episode over stdio"),
    Door("gym", "gym", None,
         "`import discoverygym.doors.gym` registers `discoverygym/<Suite>-v1`"),
    Door("openenv", "openenv", "discoverygym.doors.openenv.cli:mount",
         "`discoverygym serve openenv SUITE`: WebSocket sessions"),
    Door("verifiers", "rl", "discoverygym.doors.verifiers.cli:mount",
         "`discoverygym rl eval SUITE`; the environment id `discoverygym-rl`"),
    Door("harbor", None, "discoverygym.doors.harbor.cli:mount",
         "`discoverygym export harbor SUITE OUT_DIR`: task directories"),
)
