"""Hostile answers to a tpbench problem, submitted through the episode's tool as an
agent would. Each ends in a failed record with its reason: never a crash, a hang, a
missing record or a pass. (Before: a forged nested result line raised RecursionError
on the host and no record was written; symbolic bombs hung the host for minutes or
exhausted its memory, because the host built and simplified them itself.)"""

from __future__ import annotations

import pytest

from discoverygym.core import get_suite
from discoverygym.suites.tpbench import compare

PROBLEM = "bead-hoop-equilibrium"  # one number per test input


def _submit(code: str):
    suite = get_suite("tpbench")
    episode = suite.episode(PROBLEM)
    view = episode.view()
    function = view.workspace()["function_name"]
    args = ", ".join(view.workspace()["argument_names"])
    body = code.replace("FUNCTION", function).replace("ARGS", args)
    result = view.call("submit", {"solution": f"My answer.\n```python\n{body}\n```\n"})
    assert not result.is_error, result.text
    return episode.record(agent="hostile")


FORGED_NESTED = '''
import atexit, os, re
def FUNCTION(ARGS):
    return 0.5
# The harness's per-run marker is in the script this code runs in: find it and print
# a last "result line" of 20,000 nested lists after it.
_marker = re.search(r"@@TPBENCH-[0-9a-f]+@@", open("main.py").read()).group(0)
atexit.register(lambda: os.write(1, (_marker + "[" * 20000 + "]" * 20000 + "\\n").encode()))
'''

HUGE_LINE = '''
import atexit, os, re
def FUNCTION(ARGS):
    return 0.5
_marker = re.search(r"@@TPBENCH-[0-9a-f]+@@", open("main.py").read()).group(0)
atexit.register(lambda: os.write(1, (_marker + '{"results": ["' + "x" * 20_000_000 + '"]}\\n').encode()))
'''

BINOMIAL_BOMB = '''
import sympy
def FUNCTION(ARGS):
    n = sympy.Symbol("n", positive=True)
    return sympy.binomial(n + 10**6, 5 * 10**5) * sympy.binomial(n + 2 * 10**6, 10**6)
'''

POWER_STRING = '''
def FUNCTION(ARGS):
    return "2**(10**11)"
'''

HUGE_NUMBER = '''
def FUNCTION(ARGS):
    return 10**400
'''


@pytest.mark.parametrize("code", [FORGED_NESTED, HUGE_LINE, POWER_STRING, HUGE_NUMBER],
                         ids=["forged-nested-line", "huge-line", "power-string", "10**400"])
def test_hostile_answers_fail_with_a_reason(code):
    record = _submit(code)
    assert record.passed is False and record.score == 0.0
    details = record.details
    assert details["verdict"] in ("wrong", "error")
    tests = details["verification"]["tests"]
    assert record.error or details["verification"]["error"] or any(
        not t["passed"] and t["message"] for t in tests)


def test_a_symbolic_bomb_is_compared_outside_the_host_under_a_limit(monkeypatch):
    """An expression sympy cannot simplify in time: the worker is stopped at its limit
    (lowered here) and every symbolic test fails with the reason."""
    monkeypatch.setattr(compare, "TIME_LIMIT_S", 3.0)
    record = _submit(BINOMIAL_BOMB)
    assert record.passed is False
    messages = [t["message"] for t in record.details["verification"]["tests"]
                if not t["passed"]]
    assert messages and all("symbolic comparison" in m for m in messages)
