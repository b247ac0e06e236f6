"""Run an agent's law function on given inputs, in the project sandbox.

This is the one place agent-written code is executed for the `describe_law` tool: a
fresh process from `discoverygym.sandbox.run_isolated` (bubblewrap or unshare where the
host allows: no network, no package source or caches; resource limits and a
wall-clock limit always; the sandbox warns when only rlimits are available)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ...core.bounded import Bounds, UnsafeInput, loads

# The child reads {"source", "name", "inputs"} as JSON on stdin and prints one JSON line:
# {"outputs": [...]} or {"error": "..."}.
_RUNNER = r"""
import json, sys, traceback
request = json.loads(sys.stdin.read())
try:
    import numpy as np
    namespace = {"np": np, "numpy": np, "math": __import__("math")}
    exec(compile(request["source"], "<agent law>", "exec"), namespace)
    fn = namespace.get(request["name"])
    if not callable(fn):
        raise NameError("the source defines no function named " + request["name"])
    outputs = [np.asarray(fn(**kw), dtype=float).tolist() for kw in request["inputs"]]
    print(json.dumps({"outputs": outputs}))
except BaseException as exc:
    lines = traceback.format_exception_only(type(exc), exc)
    print(json.dumps({"error": "".join(lines).strip()[-2000:]}))
"""


#: The weakest sandbox the agent's law code may run in. Below it (rlimits-only: the
#: host's own user, no namespaces) the code could read the package source and the
#: cache the worlds are built from, or leave a process running past the verdict; there
#: the law is not run and the episode says why.
MINIMUM_ISOLATION = "rlimits-uid"


class LawFunctionError(Exception):
    """The agent's function could not be run: the message says why (for the agent)."""


def run_law_function(source: str, name: str, inputs: list[dict[str, Any]],
                     timeout_s: float = 20.0) -> np.ndarray:
    """Define `name` from `source` in a fresh sandboxed process, call it with each
    keyword dict in `inputs`, and return the outputs as a float array (one row per
    input)."""
    from ...sandbox import SandboxConfig, SandboxUnavailable, run_isolated

    request = json.dumps({"source": source, "name": name, "inputs": inputs})
    config = SandboxConfig(time_limit_s=timeout_s, cpu_s=int(timeout_s) + 5, memory_mb=2048,
                           preload={}, minimum_isolation=MINIMUM_ISOLATION)
    try:
        result = run_isolated(_RUNNER, stdin=request.encode(), config=config)
    except SandboxUnavailable as exc:
        raise LawFunctionError(f"the function was not run: {exc}") from None
    if result.timed_out:
        raise LawFunctionError(f"the function did not finish on {len(inputs)} inputs "
                               f"within {timeout_s:g} s")
    lines = result.stdout.decode(errors="replace").strip().splitlines()
    if not lines:
        reason = result.killed_reason or f"exit code {result.returncode}"
        raise LawFunctionError(f"the function's process ended without a result ({reason})")
    try:
        # The agent's code prints this line: decoded with bounds (depth, size, numbers).
        reply = loads(lines[-1], Bounds(max_depth=8, max_items=1_000_000))
    except UnsafeInput as exc:
        raise LawFunctionError(f"the function's process printed no valid result ({exc})") \
            from None
    if not isinstance(reply, dict):
        raise LawFunctionError("the function's process printed no valid result")
    if "error" in reply:
        raise LawFunctionError(str(reply["error"])[:2000])
    try:
        return np.asarray(reply["outputs"], dtype=float)
    except (TypeError, ValueError):
        raise LawFunctionError("the outputs are not all lists of numbers of one shape") from None
