"""The built-in suites' registry rows live with the suites (issue #26 item 4): each suite's
__init__ declares its row, `discoverygym.suites.ENTRIES` lists them in order, and core's
registry loads them like a plugin; reading the rows imports no suite's heavy modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from discoverygym.core import SUITES, agent_table, suite_names
from discoverygym.core.conversation import Context
from discoverygym.core.suite import conversation_expert


def test_the_registry_lists_the_rows_the_suites_declare_in_their_order():
    import discoverygym.suites as builtin

    assert list(builtin.ENTRIES) == ["gravity", "stargazer", "mad", "tpbench", "packages"]
    assert suite_names()[:5] == list(builtin.ENTRIES)
    for name, entry in builtin.ENTRIES.items():
        assert SUITES[name] == entry
        assert entry.path.startswith(f"discoverygym.suites.{name}:")
    assert SUITES["packages"].cli_name == "package"
    assert "expert-adaptive" in agent_table("gravity")  # found through the row's `agents`


def test_reading_the_rows_imports_no_suite_module():
    """The suite classes load on first use (REBOUND, JAX and astropy are slow to import)."""
    code = ("import json, sys\nfrom discoverygym.core import suite_names\nsuite_names()\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith("
            "'discoverygym.suites.'))))")
    # without the toy plugin other tests register for their worker processes
    env = {k: v for k, v in os.environ.items() if k != "DISCOVERYGYM_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, env=env).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    assert loaded == sorted(f"discoverygym.suites.{n}"
                            for n in ("gravity", "stargazer", "mad", "tpbench", "packages"))


def test_a_door_finds_a_suites_scripted_expert_through_its_row():
    """The Inspect door's `expert` policy asks the registry: gravity's row names its
    conversational expert; a conversation no suite recognises gets none."""
    gravity = Context(prompt="... G_SI ...", tools=["python", "observe", "submit"])
    expert = conversation_expert(gravity)
    assert expert is not None and expert.play.__module__ == (
        "discoverygym.suites.gravity.baselines.conversation")
    assert conversation_expert(Context(prompt="a number", tools=["probe", "submit"])) is None
