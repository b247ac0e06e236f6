"""Symbolic comparisons in a separate process with a wall-clock and a memory limit.

An answer may return a sympy expression that is expensive to build or to simplify
(`binomial(10**6, 5*10**5)` several times, `2**(10**11)`): sympy evaluates such
things eagerly, and `simplify` has no time limit. The host never builds an answer's
expression. It sends the tagged JSON of both sides here. This process sets its own
limits first, builds and compares, and prints one JSON verdict per pair. A timeout, a
crash or unreadable output makes every pending pair a failed comparison with the
reason, never a hang."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from ...core.bounded import Bounds, UnsafeInput, loads

MARKER = "===TPBENCH-SYMPY-VERDICTS==="
TIME_LIMIT_S = 20.0      # for one batch (all symbolic tests of one answer)
MEMORY_MB = 2048


def compare_isolated(pairs: list[tuple[Any, Any, int]], *, rtol: float, atol: float,
                     time_limit_s: float | None = None,
                     memory_mb: int | None = None) -> list[tuple[bool, str]]:
    """(agree, reason) for each (got, expected, seed), computed in a limited process
    (TIME_LIMIT_S and MEMORY_MB unless given)."""
    if not pairs:
        return []
    time_limit_s = TIME_LIMIT_S if time_limit_s is None else time_limit_s
    memory_mb = MEMORY_MB if memory_mb is None else memory_mb
    from .compare import encode_for_cache

    request = json.dumps({"rtol": rtol, "atol": atol,
                          "pairs": [[encode_for_cache(g), encode_for_cache(e), int(seed)]
                                    for g, e, seed in pairs]})
    code = "from discoverygym.suites.tpbench.sympy_worker import main; main()"
    failed = lambda why: [(False, why)] * len(pairs)  # noqa: E731
    try:
        proc = subprocess.run([sys.executable, "-c", code, str(memory_mb), str(time_limit_s)],
                              input=request.encode(), capture_output=True,
                              timeout=time_limit_s, start_new_session=True)
    except subprocess.TimeoutExpired:
        return failed(f"symbolic comparison stopped after the {time_limit_s:g} s limit "
                      "(the expression is too expensive to evaluate)")
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or MARKER not in out:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        why = "memory limit" if "MemoryError" in tail[0] else f"exit {proc.returncode}"
        return failed(f"symbolic comparison failed ({why}): {tail[0][:200]}")
    try:
        verdicts = loads(out.rsplit(MARKER, 1)[1].strip(), Bounds(max_depth=4))
        if not isinstance(verdicts, list) or len(verdicts) != len(pairs):
            raise UnsafeInput("wrong number of verdicts")
        return [(bool(ok), str(why)[:500]) for ok, why in verdicts]
    except (UnsafeInput, TypeError, ValueError) as exc:
        return failed(f"symbolic comparison unreadable: {exc}")


def main() -> None:
    """The worker: limits first, then build, compare and print the verdicts."""
    import resource

    memory = int(sys.argv[1]) * 1024 * 1024
    cpu = int(float(sys.argv[2])) + 1
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    from .compare import compare_values, decode_value

    request = json.loads(sys.stdin.read())
    verdicts = []
    for got, expected, seed in request["pairs"]:
        try:
            ok, why = compare_values(decode_value(got, build_sympy=True),
                                     decode_value(expected, build_sympy=True),
                                     rtol=request["rtol"], atol=request["atol"], seed=seed)
        except MemoryError:
            ok, why = False, "symbolic comparison ran out of memory"
        except Exception as exc:  # noqa: BLE001 - any failure is a failed comparison
            ok, why = False, f"symbolic comparison failed: {type(exc).__name__}: {exc}"[:500]
        verdicts.append([bool(ok), str(why)[:500]])
    print(MARKER)
    print(json.dumps(verdicts))
