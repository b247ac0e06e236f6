"""The tpbench verifier: code extraction, value comparison, verdicts, and adversarial
answers (which must all fail while the host stays unharmed)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from discoverygym.sandbox import WEAK_LEVELS, isolation_level
from discoverygym.suites.tpbench.compare import (
    SympyTree,
    SympyValue,
    compare_values,
    decode_value,
)
from discoverygym.suites.tpbench.harness import encode_value
from discoverygym.suites.tpbench.inputs import generate_inputs
from discoverygym.suites.tpbench.problem import (
    ProblemError,
    builtin_problem_dir,
    load_problem,
    problem_from_dict,
)
from discoverygym.suites.tpbench.verifier import extract_code, reference_outputs, verify

# A small problem with several kinds of output: the oscillator's complex response,
# its magnitude/phase tuple and a dict of energies.
TOY = {
    "id": "toy-oscillator", "version": 1, "title": "Driven oscillator", "level": 1,
    "domain": "classical_mechanics",
    "statement": "A damped oscillator m x'' + b x' + k x = F cos(w t).",
    "answer_requirements": "Define `response(m, b, k, w)` returning (chi, |chi|, info).",
    "solution": "chi = 1/(k - m w^2 - i b w).",
    "reference": textwrap.dedent("""
        import cmath
        def response(m, b, k, w):
            chi = 1 / (k - m * w**2 - 1j * b * w)
            return chi, (abs(chi), cmath.phase(chi)), {"resonant": abs(w * w * m - k) < 1e-12}
    """),
    "plausible_wrong": textwrap.dedent("""
        import cmath
        def response(m, b, k, w):
            chi = 1 / (k - m * w**2 + 1j * b * w)
            return chi, (abs(chi), cmath.phase(chi)), {"resonant": abs(w * w * m - k) < 1e-12}
    """),
    "function": "response",
    "arguments": [
        {"name": "m", "type": "float", "range": [0.5, 2.0]},
        {"name": "b", "type": "float", "range": [0.1, 1.0]},
        {"name": "k", "type": "float", "range": [0.5, 4.0]},
        {"name": "w", "type": "float", "range": [0.0, 3.0]},
    ],
    "tests": {"seed": 3, "samples": 6, "cases": [{"m": 1.0, "b": 0.5, "k": 1.0, "w": 1.0}]},
    "limits": {"time_s": 3},
}
REF_CODE = TOY["reference"]


@pytest.fixture(scope="module")
def toy():
    return problem_from_dict(TOY, source="toy.yaml")


def answer(code: str, prose: str = "Derivation.") -> str:
    return f"{prose}\n\n```python\n{textwrap.dedent(code).strip()}\n```\n"


# ---- extraction and comparison ----------------------------------------------------------
def test_extract_last_python_block():
    text = "```python\nx = 1\n```\nmore\n```python\ny = 2\n```\n```text\nnot code\n```"
    assert extract_code(text).strip() == "y = 2"
    assert extract_code("```\nz = 3\n```").strip() == "z = 3"  # unmarked fence
    assert extract_code("no code here") is None
    assert extract_code("```python\n   \n```") is None


def test_compare_numbers_complex_nan_inf_and_bools():
    ok = lambda g, e: compare_values(g, e, rtol=1e-5, atol=1e-8)[0]  # noqa: E731
    assert ok(1.000001, 1.0) and not ok(1.001, 1.0)
    assert ok(1e-9, 0.0) and not ok(1e-6, 0.0)
    assert ok(1 + 2j, complex(1, 2.000001)) and not ok(1 - 2j, 1 + 2j)
    assert ok(float("nan"), float("nan")) and not ok(0.0, float("nan"))
    assert ok(math.inf, math.inf) and not ok(-math.inf, math.inf) and not ok(1e308, math.inf)
    assert ok(True, True) and not ok(1, True) and not ok(True, 1.0)
    assert ok("bound", "bound") and not ok("Bound", "bound")
    assert ok(np.float64(2.0), 2) and ok(3, 3.0)


def test_compare_sequences_arrays_and_dicts():
    ok = lambda g, e: compare_values(g, e, rtol=1e-5, atol=1e-8)[0]  # noqa: E731
    assert ok([1.0, 2.0], (1.0, 2.0)) and ok(np.array([1.0, 2.0]), [1.0, 2.0])
    assert not ok([1.0, 2.0], [1.0, 2.0, 3.0]) and not ok(np.ones((2, 2)), np.ones(4))
    assert ok((1.0, (2j, "x")), (1.0, (2j, "x"))) and not ok((1.0, (2j, "y")), (1.0, (2j, "x")))
    assert ok({"a": 1.0, "b": [1, 2]}, {"a": 1.0, "b": [1, 2]})
    assert not ok({"a": 1.0}, {"a": 1.0, "b": 2.0}) and not ok({"a": 1.1}, {"a": 1.0})
    assert not ok(1.0, [1.0])


def test_compare_sympy_by_simplification_and_sampling():
    import sympy as sp

    x, y = sp.symbols("x y", positive=True)
    same = (sp.sin(x) ** 2 + sp.cos(x) ** 2) * y, y
    assert compare_values(SympyValue(same[0]), SympyValue(same[1]), rtol=1e-5, atol=1e-8)[0]
    assert not compare_values(SympyValue(x + y), SympyValue(x - y), rtol=1e-5, atol=1e-8)[0]
    # a round trip through the tagged encoding keeps the expression
    decoded = decode_value(encode_value(sp.exp(-x) * y / 2), build_sympy=True)
    assert isinstance(decoded, SympyValue) and sp.simplify(decoded.expr - sp.exp(-x) * y / 2) == 0
    # on the host an answer's expression is never built: it stays a tree, and the
    # comparison runs in the limited worker process
    raw = decode_value(encode_value(sp.exp(-x) * y / 2))
    assert isinstance(raw, SympyTree)
    assert compare_values(raw, SympyValue(sp.exp(-x) * y / 2), rtol=1e-9, atol=0)[0]
    assert not compare_values(raw, SympyValue(sp.exp(-x) * y), rtol=1e-9, atol=0)[0]


def test_encoding_round_trip_keeps_types():
    values = [1.5, 3, 2 - 1j, float("nan"), -math.inf, True, "s", None, (1, [2.0, {"k": 1j}]),
              np.arange(6.0).reshape(2, 3), np.array([1 + 1j, 2])]
    for v in values:
        back = decode_value(encode_value(v))
        assert compare_values(back, v, rtol=0, atol=0)[0], v


# ---- verdicts ------------------------------------------------------------------------------
def test_reference_is_correct_and_plausible_wrong_is_wrong(toy):
    good = verify(toy, toy.reference_solution_text())
    assert good.verdict == "correct" and good.n_passed == good.n_tests == 7
    bad = verify(toy, toy.wrong_solution_text())
    assert bad.verdict == "wrong" and bad.n_passed < bad.n_tests
    failed = [t for t in bad.tests if not t.passed]
    assert failed and "expected" in failed[0].message and "w" in failed[0].args


def test_error_no_code_and_timeout_verdicts(toy):
    assert verify(toy, "I think chi = 1/(k - m w^2).").verdict == "no_code"
    raised = verify(toy, answer("def response(m, b, k, w):\n    raise ValueError('nope')"))
    assert raised.verdict == "error" and "ValueError" in raised.error
    missing = verify(toy, answer("def other(m, b, k, w):\n    return 0"))
    assert missing.verdict == "error" and "response" in missing.error
    syntax = verify(toy, answer("def response(m, b, k, w) return 0"))
    assert syntax.verdict == "error" and "SyntaxError" in syntax.error
    sleepy = verify(toy, answer("import time\ndef response(m, b, k, w):\n    time.sleep(60)"))
    assert sleepy.verdict == "timeout"


def test_partly_raising_answer_is_wrong_with_details(toy):
    code = REF_CODE.replace("chi = 1", "if w == 1.0:\n        raise ZeroDivisionError\n    chi = 1")
    v = verify(toy, answer(code))  # raises on the explicit case only
    assert v.verdict == "wrong" and v.n_passed == v.n_tests - 1
    assert v.tests[0].message.startswith("raised: ZeroDivisionError")


def test_answer_must_use_every_argument():
    """A sweep varies each argument alone: dropping one argument cannot pass."""
    data = dict(TOY, id="toy-sweep", tests={"seed": 1, "samples": 0, "sweep": True})
    problem = problem_from_dict(data)
    labels = {i.label.split()[1] for i in generate_inputs(problem) if i.label.startswith("sweep")}
    assert labels == {"m", "b", "k", "w"}
    ignores_b = REF_CODE.replace("1j * b * w", "1j * 0.5 * w")
    assert verify(problem, answer(ignores_b)).verdict == "wrong"


# ---- adversarial answers ------------------------------------------------------------------
STRONG = isolation_level() not in WEAK_LEVELS
needs_isolation = pytest.mark.skipif(not STRONG, reason="needs filesystem isolation")


@needs_isolation
def test_reading_the_reference_fails(toy):
    shipped = load_problem(builtin_problem_dir() / "well-position-spread.yaml")
    reference_outputs(shipped)  # the cache now holds reference outputs
    from discoverygym.core.paths import cache_root

    code = f"""
        import glob, json, os
        def response(m, b, k, w):
            found = []
            for root in ({str(builtin_problem_dir())!r}, {str(cache_root())!r}):
                found += glob.glob(os.path.join(root, "**", "*"), recursive=True)
            if found:
                return found[0]
            raise RuntimeError("nothing readable")
    """
    v = verify(toy, answer(code))
    assert v.verdict == "error" and "nothing readable" in v.error
    # and the verifier's own module cannot be imported to reuse its code
    v = verify(toy, answer("from discoverygym.suites.tpbench import verifier\n"
                           "def response(m, b, k, w):\n    return 0"))
    assert v.verdict == "error" and ("ModuleNotFoundError" in v.error or "ImportError" in v.error)


def test_printing_passed_and_exiting_early_fail(toy):
    prints = answer("print('PASSED: all tests correct')\nprint('{\"verdict\": \"correct\"}')\n"
                    "def response(m, b, k, w):\n    print('PASSED')\n    return 0.0")
    assert verify(toy, prints).verdict == "wrong"
    for exit_code in ("import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit"):
        v = verify(toy, answer(exit_code + "\ndef response(m, b, k, w):\n    return 0"))
        assert v.verdict == "error", exit_code
    exits_in_call = answer("import os\ndef response(m, b, k, w):\n    os._exit(0)")
    assert verify(toy, exits_in_call).verdict == "error"


def test_monkeypatching_the_comparison_or_forging_results_fails(toy):
    # patching anything in the answer's process cannot touch the host's comparison
    patch = answer("""
        import builtins, math
        math.isclose = lambda *a, **k: True
        builtins.abs = lambda x: 0.0
        try:
            import discoverygym.suites.tpbench.compare as c
            c.compare_values = lambda *a, **k: (True, "")
        except Exception:
            pass
        def response(m, b, k, w):
            return 0.0
    """)
    assert verify(toy, patch).verdict == "wrong"
    # forging the result line after reading the marker out of the script fails too: the
    # forged outputs are compared with the reference on the host
    forge = answer("""
        import json, os, re, sys
        src = open(sys.argv[0]).read() if sys.argv and os.path.exists(sys.argv[0]) else ""
        marks = re.findall(r"@@TPBENCH-[0-9a-f]{32}@@", src)
        if marks:
            ok = {"ok": {"t": "float", "v": 1.0}}
            os.write(1, ("\\n" + marks[-1] + json.dumps({"results": [ok] * 7,
                         "load_error": None}) + "\\n").encode())
            os._exit(0)
        def response(m, b, k, w):
            return 1.0
    """)
    assert verify(toy, forge).verdict in ("wrong", "error")


# Only where the sandbox hides the host's files: at the weak level the answer would run
# with the host's rights and really overwrite the shipped problem file.
@needs_isolation
def test_answers_cannot_write_host_files(toy, tmp_path):
    target = tmp_path / "pwned.txt"
    problem_file = builtin_problem_dir() / "well-position-spread.yaml"
    before = problem_file.read_bytes()
    code = f"""
        import os, pathlib
        for path in ({str(target)!r}, {str(problem_file)!r}):
            try:
                pathlib.Path(path).write_text("pwned")
            except Exception:
                pass
        def response(m, b, k, w):
            return 0.0
    """
    verify(toy, answer(code))
    assert problem_file.read_bytes() == before
    assert not target.exists()


def test_fork_bombs_and_memory_hogs_are_stopped(toy):
    fork_bomb = answer("""
        import os
        def response(m, b, k, w):
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
    """)
    assert verify(toy, fork_bomb).verdict in ("timeout", "error")
    memory_hog = answer("def response(m, b, k, w):\n    x = bytearray(8 * 1024**3)\n"
                        "    return 0.0")
    assert verify(toy, memory_hog).verdict == "error"


# ---- problem files -------------------------------------------------------------------------
def test_schema_errors_name_the_file_and_field(tmp_path):
    bad = dict(TOY, level=7)
    with pytest.raises(ProblemError, match=r"toy\.yaml: field 'level'"):
        problem_from_dict(bad, source="toy.yaml")
    bad = dict(TOY, arguments=TOY["arguments"][:3])
    with pytest.raises(ProblemError, match=r"field 'reference'.*takes"):
        problem_from_dict(bad, source="toy.yaml")
    bad = dict(TOY, tests={"cases": [{"m": 1.0}], "samples": 0})
    with pytest.raises(ProblemError, match=r"tests\.cases\.0"):
        problem_from_dict(bad, source="toy.yaml")
    bad = dict(TOY, tests={"samples": 3, "require": ["q > 1"]})
    with pytest.raises(ProblemError, match=r"tests\.require.*'q'"):
        problem_from_dict(bad, source="toy.yaml")
    path = tmp_path / "other-name.yaml"
    import yaml

    path.write_text(yaml.safe_dump(TOY))
    with pytest.raises(ProblemError, match=r"other-name\.yaml: field 'id'"):
        load_problem(path)
    (tmp_path / "broken.yaml").write_text("id: [unclosed")
    with pytest.raises(ProblemError, match=r"broken\.yaml: not valid YAML"):
        load_problem(tmp_path / "broken.yaml")


def test_inputs_are_deterministic_and_respect_conditions():
    data = dict(TOY, tests={"seed": 5, "samples": 20, "require": ["k > 2 * m"]})
    problem = problem_from_dict(data)
    a, b = generate_inputs(problem), generate_inputs(problem)
    assert a == b and len(a) == 20
    assert all(i.args[2] > 2 * i.args[0] for i in a)
    other = problem_from_dict(dict(data, tests={"seed": 6, "samples": 20,
                                                "require": ["k > 2 * m"]}))
    assert generate_inputs(other) != a


def test_cache_is_keyed_by_version(toy):
    inputs, outputs = reference_outputs(toy)
    bumped = problem_from_dict(dict(TOY, version=2,
                                    reference=REF_CODE.replace("1 / (", "2 / (")))
    _, outputs2 = reference_outputs(bumped)
    assert compare_values(outputs2[0][0], 2 * outputs[0][0], rtol=1e-12, atol=0)[0]
    assert Path(bumped.source or "x")  # the records carry problem.key with the version
    assert bumped.key == "toy-oscillator@v2"


def test_complex_bool_and_string_arguments():
    data = {
        "id": "toy-kinds", "version": 1, "title": "Argument kinds", "level": 1,
        "domain": "quantum_mechanics", "statement": "s", "answer_requirements": "r",
        "solution": "x",
        "reference": "import cmath\ndef f(z, n, flip, branch):\n"
                     "    w = cmath.sqrt(z) if branch == 'principal' else -cmath.sqrt(z)\n"
                     "    return (w ** n if not flip else -w ** n), {'n': n, 'branch': branch}",
        "plausible_wrong": "import cmath\ndef f(z, n, flip, branch):\n"
                           "    w = cmath.sqrt(z)\n"
                           "    return (w ** n if not flip else -w ** n), {'n': n, 'branch': branch}",
        "function": "f",
        "arguments": [
            {"name": "z", "type": "complex", "range": [-2.0, 2.0], "imag_range": [-1.0, 1.0]},
            {"name": "n", "type": "int", "range": [1, 3]},
            {"name": "flip", "type": "bool"},
            {"name": "branch", "type": "str", "choices": ["principal", "other"]},
        ],
        "tests": {"seed": 2, "samples": 10,
                  "cases": [{"z": [-1.0, 0.0], "n": 1, "flip": False, "branch": "other"}]},
    }
    problem = problem_from_dict(data)
    inputs = generate_inputs(problem)
    assert isinstance(inputs[0].args[0], complex) and inputs[0].args[0] == -1 + 0j
    assert {type(i.args[2]) for i in inputs} == {bool}
    assert verify(problem, problem.reference_solution_text()).verdict == "correct"
    assert verify(problem, problem.wrong_solution_text()).verdict == "wrong"


def test_sympy_answers_end_to_end():
    """A problem whose answer is a symbolic expression: an equivalent form passes, a
    different expression fails, and the reference outputs survive the cache."""
    data = {
        "id": "toy-symbolic", "version": 1, "title": "Symbolic", "level": 1,
        "domain": "classical_mechanics", "statement": "s", "answer_requirements": "r",
        "solution": "x",
        "reference": "import sympy as sp\ndef energy(n):\n    t = sp.Symbol('t', positive=True)\n"
                     "    return sp.sin(t) ** 2 * n + sp.cos(t) ** 2 * n",
        "function": "energy",
        "arguments": [{"name": "n", "type": "int", "range": [1, 4]}],
        "tests": {"samples": 3, "seed": 1},
        "limits": {"time_s": 20},
    }
    problem = problem_from_dict(data)
    same = answer("import sympy as sp\ndef energy(n):\n    return sp.Integer(n)")
    assert verify(problem, same).verdict == "correct"
    other = answer("import sympy as sp\ndef energy(n):\n    t = sp.Symbol('t', positive=True)\n"
                   "    return n * sp.cos(2 * t)")
    assert verify(problem, other).verdict == "wrong"
    from discoverygym.suites.tpbench import verifier

    verifier._MEMORY_CACHE.clear()  # now from the cache file on disk
    assert verify(problem, same).verdict == "correct"
