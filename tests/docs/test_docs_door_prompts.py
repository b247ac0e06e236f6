"""Each door's prompt speaks only of tools the door offers.

Episode prompts are written for an agent with the sandboxed `python` tool and its
workspace (`observations`, `data`, DATA_DIR...). Gymnasium, OpenEnv and MCP without
`--no-interpreter` offer only the episode's own tools, so what they send must say that
the interpreter and its workspace are not there. Each case takes the prompt and the tool
list from the door itself (Gym's reset, an MCP client over real stdio) and checks that
every tool the prompt names is one the door lists, or that the prompt says in so many
words that it is absent. The check fails on the bare prompts (test below), so it would
catch a door that stopped saying so."""

from __future__ import annotations

import os
import re
import sys

import anyio
import pytest

from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.doors.shared.interpreter_tool import NO_INTERPRETER_NOTE, prompt_for_door

# Suites whose first episode builds in about a second; their prompts name the workspace
# (gravity, stargazer) or the python tool (packages) or neither (tpbench).
SUITES = ("gravity", "stargazer", "tpbench", "packages")
ABSENT = "no python interpreter"


def _first_spec(suite: str) -> EpisodeSpec:
    return get_suite(suite).episodes()[0]


def _named_tools(prompt: str, candidates: set[str]) -> set[str]:
    """The tools among `candidates` the prompt names: `name`, name(...), 'the name tool'."""
    named = set()
    for name in candidates:
        pattern = rf"`{re.escape(name)}`|\b{re.escape(name)}\(|\b{re.escape(name)} tool\b"
        if re.search(pattern, prompt, re.I):
            named.add(name)
    if re.search(r"\bworkspace\b|\binterpreter\b", prompt, re.I):
        named.add("python")  # the workspace is the interpreter's
    return named


def promises_missing_tools(prompt: str, door_tools: set[str], episode_tools: set[str]) -> set[str]:
    """The tools the prompt names that the door does not offer and does not disclaim."""
    missing = _named_tools(prompt, episode_tools | {"python"}) - door_tools
    if "python" in missing and ABSENT in prompt:
        missing.discard("python")
    return missing


@pytest.mark.parametrize("suite", SUITES)
def test_the_bare_prompt_fails_the_check_where_it_names_the_interpreter(suite):
    """Without the door's note a prompt that names the workspace or the python tool
    promises a tool Gym, OpenEnv and MCP --no-interpreter lack."""
    episode = _first_spec(suite).build()
    tools = {spec.name for spec in episode.tool_specs()}
    names_python = "python" in _named_tools(episode.prompt, tools | {"python"})
    assert promises_missing_tools(episode.prompt, tools, tools) == (
        {"python"} if names_python else set())
    if suite in ("gravity", "stargazer", "packages"):
        assert names_python, f"{suite}'s prompt no longer names the workspace: update SUITES"


@pytest.mark.parametrize("suite", SUITES)
def test_gymnasium_prompt_names_only_its_tools(suite):
    gym = pytest.importorskip("gymnasium")
    import discoverygym.doors.gym  # noqa: F401  (registers the environments)

    spec = _first_spec(suite)
    env_id = next(i for i in gym.registry if i.startswith("discoverygym/")
                  and gym.registry[i].kwargs.get("suite") == suite)
    env = gym.make(env_id, task_id=spec.task_id, **spec.options)
    try:
        observation, info = env.reset(seed=0)
        offered = {t["function"]["name"] if "function" in t else t["name"]
                   for t in info["tools"]}
        episode_tools = {s.name for s in env.unwrapped._episode.tool_specs()}
        assert "python" not in offered
        assert promises_missing_tools(observation["text"], offered, episode_tools) == set()
        assert "env.unwrapped.workspace()" in observation["text"]
    finally:
        env.close()


def test_openenv_prompt_names_only_its_tools():
    """OpenEnv offers the episode's tools only: its reset text is this prompt
    (tests/doors/openenv/test_openenv_door.py plays the door itself in .venv-openenv)."""
    for suite in SUITES:
        episode = _first_spec(suite).build()
        tools = {s.name for s in episode.tool_specs()}
        text = prompt_for_door(episode.prompt, interpreter=False)
        assert text.endswith(NO_INTERPRETER_NOTE)
        assert promises_missing_tools(text, tools, tools) == set()


async def _mcp_prompt_and_tools(suite: str, interpreter: bool, tmp_path) -> tuple[str, set]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    spec = _first_spec(suite)
    args = ["-m", "discoverygym.cli", "mcp", suite, spec.task_id, "--record",
            str(tmp_path / "record.json")]
    for key, value in spec.options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    if not interpreter:
        args.append("--no-interpreter")
    env = dict(os.environ)
    env.pop("DISCOVERYGYM_PLUGINS", None)  # another test module's toy plugin: not importable there
    params = StdioServerParameters(command=sys.executable, args=args, env=env,
                                   cwd=str(tmp_path))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
    return init.instructions or "", tools


@pytest.mark.parametrize("suite", ["gravity", "packages"])
@pytest.mark.parametrize("interpreter", [True, False])
def test_mcp_instructions_name_only_its_tools(suite, interpreter, tmp_path):
    pytest.importorskip("mcp")
    instructions, offered = anyio.run(_mcp_prompt_and_tools, suite, interpreter, tmp_path)
    assert ("python" in offered) == interpreter
    episode_tools = offered - {"python"}
    assert promises_missing_tools(instructions, offered, episode_tools) == set()
    assert (ABSENT in instructions) == (not interpreter)
