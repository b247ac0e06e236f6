"""Run an agent's law function on given inputs, out of process.

This is the one place agent-written code is executed for the `describe_law` tool. For
now it is a separate Python process in isolated mode (-I: no user site, no PYTHON*
variables), with an empty environment, a temporary working directory and a wall-clock
limit. A proper sandbox (namespaces, no network, resource limits) replaces the body of
`run_law_function` later; its signature stays."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

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


class LawFunctionError(Exception):
    """The agent's function could not be run: the message says why (for the agent)."""


def run_law_function(source: str, name: str, inputs: list[dict[str, Any]],
                     timeout_s: float = 20.0) -> np.ndarray:
    """Define `name` from `source` in a fresh process, call it with each keyword dict in
    `inputs`, and return the outputs as a float array (one row per input)."""
    request = json.dumps({"source": source, "name": name, "inputs": inputs})
    with tempfile.TemporaryDirectory(prefix="dg-law-") as workdir:
        try:
            proc = subprocess.run([sys.executable, "-I", "-c", _RUNNER], input=request,
                                  capture_output=True, text=True, timeout=timeout_s,
                                  cwd=workdir, env={"PATH": "/usr/bin:/bin"})
        except subprocess.TimeoutExpired:
            raise LawFunctionError(f"the function did not finish on {len(inputs)} inputs "
                                   f"within {timeout_s:g} s") from None
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise LawFunctionError("the function's process ended without a result "
                               f"(exit code {proc.returncode})")
    try:
        reply = json.loads(lines[-1])
    except json.JSONDecodeError:
        raise LawFunctionError("the function's process printed no valid result") from None
    if "error" in reply:
        raise LawFunctionError(reply["error"])
    try:
        return np.asarray(reply["outputs"], dtype=float)
    except (TypeError, ValueError):
        raise LawFunctionError("the outputs are not all lists of numbers of one shape") from None
