"""The limited worker process of the symbolic comparisons (`compare.compare_isolated`
starts it): it sets its own memory and CPU limits first, then builds both sides' sympy
expressions, compares them and prints one JSON verdict per pair after `compare.MARKER`.
The host side lives in `compare.py`, so this module imports it and not the reverse."""

from __future__ import annotations

import json
import sys


def main() -> None:
    """The worker: limits first, then build, compare and print the verdicts."""
    import resource

    memory = int(sys.argv[1]) * 1024 * 1024
    cpu = int(float(sys.argv[2])) + 1
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    from .compare import MARKER, compare_values, decode_value

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
