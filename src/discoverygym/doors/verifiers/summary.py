"""What `discoverygym rl eval` says after `vf-eval`: a short table (rollouts, mean reward,
passed, errored) read from the run's traces, the cause of each errored rollout in one
line, and the exit status (non-zero when a rollout errored). An errored rollout counts
in the mean with reward 0, as its record says.

Also the check made before any rollout: that the chat server streams, since the chat
harness reads streamed replies only. No verifiers import."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.bounded import clip

#: Errored rollouts whose cause is printed; the rest are counted.
MAX_CAUSES_SHOWN = 5
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass
class RolloutSummary:
    rollouts: int = 0
    reward_sum: float = 0.0
    passed: int = 0
    errored: int = 0
    causes: list[str] = field(default_factory=list)

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.rollouts if self.rollouts else 0.0


def one_line(text: Any, limit: int = 200) -> str:
    """Text from a trace (a model server's words, among others) fit for one terminal
    line: control characters replaced, clipped."""
    return clip(_UNPRINTABLE.sub("?", str(text)), limit)


def read_traces(path: Path) -> list[dict[str, Any]]:
    """The traces of a `vf-eval` run (`traces.jsonl`: one episode per line)."""
    traces: list[dict[str, Any]] = []
    for line in path.read_text().splitlines():
        if line.strip():
            traces.extend(json.loads(line).get("traces") or [])
    return traces


def summarize(traces: list[dict[str, Any]]) -> RolloutSummary:
    """Every rollout counts: one without a reward (an error verifiers did not score)
    counts as 0."""
    summary = RolloutSummary()
    for trace in traces:
        summary.rollouts += 1
        reward = (trace.get("rewards") or {}).get("episode_score") or {}
        summary.reward_sum += float(reward.get("score") or 0.0)
        record = (trace.get("info") or {}).get("record") or {}
        summary.passed += bool(record.get("passed")) and bool(trace.get("ok"))
        if not trace.get("ok"):
            summary.errored += 1
            errors = trace.get("errors") or [{}]
            last = errors[-1] or {}
            summary.causes.append(one_line(f"{last.get('type', 'error')}: "
                                           f"{last.get('message', '')}"))
    return summary


def summary_lines(summary: RolloutSummary, traces_path: Path) -> list[str]:
    lines = [f"{'rollouts':>8}  {'mean reward':>11}  {'passed':>6}  {'errored':>7}",
             f"{summary.rollouts:>8}  {summary.mean_reward:>11.3f}  {summary.passed:>6}  "
             f"{summary.errored:>7}"]
    for cause in summary.causes[:MAX_CAUSES_SHOWN]:
        lines.append(f"errored: {cause}")
    if len(summary.causes) > MAX_CAUSES_SHOWN:
        lines.append(f"... and {len(summary.causes) - MAX_CAUSES_SHOWN} more errored")
    lines.append(f"traces: {traces_path}")
    return lines


class ChatServerRefused(ValueError):
    """The chat server cannot serve the chat harness; the message says why."""


def check_streaming(base_url: str, model: str, api_key: str | None,
                    timeout_s: float = 60.0) -> None:
    """Ask the chat server for a one-token streamed reply. A server that answers a
    streaming request with a whole JSON reply would fail every rollout ("upstream stream
    ended before its terminal event"), so it is refused here with the reason. A server
    that cannot be reached is refused too; any other answer (an error status) is left
    to the rollouts, which report it."""
    import httpx

    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}],
            "stream": True, "max_tokens": 1}
    try:
        with httpx.Client(timeout=timeout_s) as client, client.stream(
                "POST", url, json=body, headers=headers) as reply:
            kind = reply.headers.get("content-type", "")
            if reply.is_success and not kind.startswith("text/event-stream"):
                answered = one_line(kind or "no content type", 60)
                raise ChatServerRefused(
                    f"the chat server at {one_line(base_url)} does not stream: it answered "
                    f"a streaming request (stream: true) with {answered}. "
                    "verifiers' chat harness reads streamed replies (server-sent events) "
                    "only; turn streaming on in the server (vLLM, SGLang and OpenAI's API "
                    "stream)")
            for _ in zip(range(64), reply.iter_bytes(), strict=False):
                pass  # read the short reply out (at most 64 chunks)
    except httpx.HTTPError as exc:
        raise ChatServerRefused(f"cannot reach the chat server at {one_line(base_url)}: "
                                f"{one_line(exc)}") from None
