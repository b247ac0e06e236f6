"""The optional review: an LLM reads what the agent will see (`problem/`) and says
whether the source can be named from it and whether the task is solvable from it.

The review runs only after every machine gate passed, so it can hold a package back but
never pass a failed gate. A reply that is not exactly the JSON object asked for, a
timeout or a provider failure also holds the package back: a review that was asked for
and did not happen is not a pass. Any Inspect AI model can review
(`validity.inspect_grader(model)`); the tests use a scripted one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .format.check import Finding

#: An async prompt -> reply function, e.g. `validity.inspect_grader(model)`.
Reviewer = Callable[[str], Awaitable[str]]

MAX_PROSE_CHARS = 20_000
MAX_LISTED_FILES = 200

PROMPT = """You review a research task before it is given to an AI agent. Below is
everything the agent will read except the data itself (listed by name and size).

1. Could someone name the publication, dataset release or method this task was taken
   from, from this text alone? (source_named)
2. Is the task solvable from what is given: a clear objective, the data needed, and an
   output format that can be checked? (solvable)

Reply with exactly one JSON object and nothing else:
{{"source_named": <bool>, "solvable": <bool>, "reason": <string>}}

=== README.md ===
{readme}

=== data_description.md ===
{description}

=== files ===
{files}
"""


def review_prompt(package_root: Path) -> str:
    problem = Path(package_root) / "problem"

    def read(name: str) -> str:
        path = problem / name
        return path.read_text(errors="replace")[:MAX_PROSE_CHARS] if path.is_file() else "(none)"

    files = [f"{p.relative_to(problem).as_posix()} ({p.stat().st_size} bytes)"
             for p in sorted(problem.rglob("*")) if p.is_file()][:MAX_LISTED_FILES]
    return PROMPT.format(readme=read("README.md"), description=read("data_description.md"),
                         files="\n".join(files))


def parse_review(reply: str) -> dict[str, Any]:
    """The reviewer's verdict, or ValueError: exactly the three keys, right types."""
    try:
        data = json.loads(reply.strip())
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"the reply is not JSON ({getattr(exc, 'msg', exc)})") from exc
    if not isinstance(data, dict) or set(data) != {"source_named", "solvable", "reason"}:
        raise ValueError('the reply must be {"source_named": bool, "solvable": bool, '
                         '"reason": str} exactly')
    if not isinstance(data["source_named"], bool) or not isinstance(data["solvable"], bool) \
            or not isinstance(data["reason"], str):
        raise ValueError("source_named and solvable must be booleans, reason a string")
    return data


async def _ask(reviewer: Reviewer, prompt: str, timeout_s: float) -> str:
    return await asyncio.wait_for(reviewer(prompt), timeout=timeout_s)


def review_package(package_root: Path, reviewer: Reviewer, *, timeout_s: float = 120.0
                   ) -> tuple[dict[str, Any], list[Finding]]:
    """(verdict, findings): no finding means the reviewer passed the package."""
    prompt = review_prompt(package_root)
    try:
        reply = asyncio.run(_ask(reviewer, prompt, timeout_s))
    except TimeoutError:
        error = f"the reviewer timed out after {timeout_s:g} s"
        return {"outcome": "error", "error": error}, [Finding("review", "problem/", error)]
    except Exception as exc:  # noqa: BLE001 - a provider failure holds the package back
        error = f"the reviewer failed: {type(exc).__name__}: {str(exc)[:300]}"
        return {"outcome": "error", "error": error}, [Finding("review", "problem/", error)]
    try:
        verdict = parse_review(str(reply))
    except ValueError as exc:
        return ({"outcome": "error", "error": str(exc), "reply": str(reply)[:400]},
                [Finding("review", "problem/", f"malformed review: {exc}")])
    findings = []
    if verdict["source_named"]:
        findings.append(Finding("review", "problem/", "the reviewer could name the source: "
                                + verdict["reason"][:300]))
    if not verdict["solvable"]:
        findings.append(Finding("review", "problem/", "the reviewer found the task not "
                                "solvable: " + verdict["reason"][:300]))
    return {"outcome": "flag" if findings else "ok", **verdict}, findings
