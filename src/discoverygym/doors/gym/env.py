"""Gymnasium environments: one id per suite (e.g. `discoverygym/Gravity-v1`).

Action: a tool call, `{"tool": index into the episode's tool list, "args": JSON text}`.
Observation: `{"text": the tool's result (the prompt after reset), "is_error": 0/1,
"budget_left": what remains of the episode's budget (-1 if it has none)}`.
Reward: 0 on every step except the last, which pays the episode's score (in [0, 1] for
pass/fail suites). `terminated` when the episode ends; `truncated` after `max_steps`
calls (the episode is then scored without an answer, i.e. as a failure). The record
is in `info["record"]` once the episode is over; never before.

`info["images"]` holds the PNG bytes of a tool result that has pictures (mad's visual
variant). `env.unwrapped.workspace()` gives the variables an LLM agent's interpreter would hold
now (e.g. gravity's `observations` DataFrame), so code written for the agent view can
play through Gym unchanged."""

from __future__ import annotations

import string
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ...core import SUITES, Episode, EpisodeSpec, get_suite, load_plugins
from ...core.bounded import UnsafeInput, loads
from ..shared.interpreter_tool import prompt_for_door

CHARSET = frozenset(string.printable)
MAX_TEXT = 16_384
#: Gym offers the episode's tools and no interpreter: the prompt says so, and where the
#: workspace the instructions name is for code that holds the environment.
GYM_NOTE = (
    "\n\nThis environment offers the tools listed and no python interpreter: the "
    "workspace and the variables the instructions above name (such as DataFrames) are not "
    "tools here (code that holds the environment reads them with "
    "env.unwrapped.workspace()). Each tool's result text holds the data it returns.")


def _clean(text: str) -> str:
    """Fit text to the observation space: printable ASCII, bounded length."""
    text = "".join(c if c in CHARSET else "?" for c in text)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 15] + "\n[truncated]"


class DiscoveryEnv(gym.Env):
    """One discoverygym episode per `reset`."""

    metadata = {"render_modes": []}

    def __init__(self, suite: str, task_id: str | None = None, max_steps: int = 500,
                 **episode_options: Any) -> None:
        self._suite = get_suite(suite)
        self._task_id = task_id or self._suite.tasks()[0].id
        self._episode_options = dict(episode_options)
        self._max_steps = int(max_steps)
        probe = self._spec(self._task_id, 0, {}).build()
        self.tool_names: list[str] = [s.name for s in probe.tool_specs()]
        self.action_space = spaces.Dict({
            "tool": spaces.Discrete(len(self.tool_names)),
            "args": spaces.Text(max_length=4096, charset=string.printable),
        })
        self.observation_space = spaces.Dict({
            "text": spaces.Text(max_length=MAX_TEXT, charset=string.printable),
            "is_error": spaces.Discrete(2),
            "budget_left": spaces.Box(low=-1.0, high=1e12, shape=(1,), dtype=np.float64),
        })
        self._episode: Episode | None = None
        self._steps = 0

    def _spec(self, task_id: str, seed: int, options: dict[str, Any]) -> EpisodeSpec:
        return EpisodeSpec(self._suite.name, task_id, seed, {**self._episode_options, **options})

    def _obs(self, text: str, is_error: bool) -> dict[str, Any]:
        left = self._episode.budget_left() if self._episode is not None else None
        return {"text": _clean(text), "is_error": int(is_error),
                "budget_left": np.array([-1.0 if left is None else float(left)], dtype=np.float64)}

    def workspace(self) -> dict[str, Any]:
        """The current episode's workspace (fresh copies), as `EpisodeView.workspace`."""
        if self._episode is None:
            raise RuntimeError("call reset() before workspace()")
        return self._episode.workspace()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", self._task_id)
        episode_seed = int(seed) if seed is not None else int(options.pop("seed", 0))
        self._episode = self._spec(task_id, episode_seed, options).build()
        self._steps = 0
        prompt = prompt_for_door(self._episode.prompt, interpreter=False, note=GYM_NOTE)
        return self._obs(prompt, False), {"tools": self._episode.tools()}

    def step(self, action: dict[str, Any]):
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        self._steps += 1
        index = int(action["tool"])
        raw = action.get("args", "{}")
        try:
            # the policy's text: bounded in size, depth and number range
            args = loads(raw) if isinstance(raw, str) else raw
        except UnsafeInput as exc:
            result_text, is_error, data = (f"args must be a JSON object ({exc}); nothing was "
                                           "charged.", True, None)
            images: list[bytes] = []
        else:
            result = self._episode.call(self.tool_names[index], args)
            result_text, is_error, data = result.text, result.is_error, result.data
            images = list(result.images)
        terminated = self._episode.done
        truncated = not terminated and self._steps >= self._max_steps
        info: dict[str, Any] = {"data": data, "images": images}
        reward = 0.0
        if terminated or truncated:
            record = self._episode.record(
                agent="gymnasium", error=None if terminated else "step limit reached")
            reward = float(record.score)
            info["record"] = record.to_dict()
        return self._obs(result_text, is_error), reward, terminated, truncated, info


def register_all() -> None:
    """Register `discoverygym/<gym_name>-v1` for every registered suite, plugins
    included (a plugin loaded later gets its id when this runs again)."""
    load_plugins()
    for suite, entry in SUITES.items():
        env_id = f"discoverygym/{entry.gym_name}-v1"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point="discoverygym.doors.gym.env:DiscoveryEnv",
                         kwargs={"suite": suite})


register_all()
