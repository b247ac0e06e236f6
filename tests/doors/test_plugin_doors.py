"""A suite added from outside (the toy plugin, registered through DISCOVERYGYM_PLUGINS)
gets every door with no edit outside its module: its Gymnasium environment, its own
CLI commands, its LLM limits, interpreter limits and system-prompt note, the Inspect
task and the MCP server. Each check runs in a fresh interpreter, as a user's would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from testpaths import TESTS


def _python(code: str) -> str:
    env = {**os.environ, "DISCOVERYGYM_PLUGINS": "toy_suite",
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_plugin_suite_plays_through_gym_by_its_declared_name():
    out = _python("""
import json, gymnasium as gym, discoverygym.doors.gym
env = gym.make("discoverygym/Toy-v1")
obs, info = env.reset(seed=3)
names = env.unwrapped.tool_names
lo, hi = 0.0, 100.0
for _ in range(9):
    mid = (lo + hi) / 2
    obs, r, term, trunc, info = env.step({"tool": names.index("probe"),
                                          "args": json.dumps({"x": mid})})
    if info["data"]["above"]:
        lo = mid
    else:
        hi = mid
obs, r, term, trunc, info = env.step({"tool": names.index("submit"),
                                      "args": json.dumps({"answer": (lo + hi) / 2})})
print(json.dumps({"term": term, "reward": r, "passed": info["record"]["passed"]}))
""")
    assert json.loads(out.strip().splitlines()[-1]) == {"term": True, "reward": 1.0,
                                                         "passed": True}


def test_plugin_suite_limits_and_note_reach_the_model_door():
    out = _python("""
import json
from discoverygym.doors.inspect.limits import sandbox_config, suite_limits, system_prompt
from discoverygym.doors.inspect._registry import TASKS
config = sandbox_config("toy")
print(json.dumps({"note": system_prompt("toy").strip().splitlines()[-1],
                  "messages": suite_limits("toy").messages,
                  "python": [config.time_limit_s, config.cpu_s],
                  "inspect_task": "toy" in TASKS}))
""")
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen == {"note": "The hidden number is a real number; a probe tells you which "
                            "side it is on.",
                    "messages": 60, "python": [20, 120], "inspect_task": True}


def test_plugin_suite_cli_commands_are_mounted():
    out = _python("""
from typer.testing import CliRunner
from discoverygym.cli import app
result = CliRunner().invoke(app, ["toy", "range"])
print(result.exit_code, result.output.strip())
""")
    assert out.strip().splitlines()[-1] == "0 0 100"
