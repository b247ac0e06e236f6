"""Decode tagged JSON outputs on the host (no eval, no unpickling) and compare an
answer's output with the reference output.

Rules: numbers (int, float, complex, numpy scalars) agree when
|got - expected| <= atol + rtol * |expected|; NaN matches only NaN, an infinity only
the same infinity. Sequences (list, tuple, numpy array) are interchangeable when their
shapes agree and compare element by element; dicts need the same keys. Booleans,
strings and None compare exactly (a boolean is not a number here). Sympy expressions
agree when the simplified difference is zero, or else when they agree numerically at
seeded sample points of their free symbols (treated as positive reals).

An answer may return a sympy expression that is expensive to build or to simplify
(`binomial(10**6, 5*10**5)` several times, `2**(10**11)`): sympy evaluates such
things eagerly, and `simplify` has no time limit. The host never builds an answer's
expression: `compare_isolated` sends the tagged JSON of both sides to a separate
process (`sympy_worker.py`) that sets its own limits first, builds and compares. A
timeout, a crash or unreadable output makes every pending pair a failed comparison
with the reason, never a hang."""

from __future__ import annotations

import cmath
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.bounded import Bounds, UnsafeInput, loads
from .harness import encode_value

MAX_SYMPY_NODES = 2000
MARKER = "===TPBENCH-SYMPY-VERDICTS==="
TIME_LIMIT_S = 20.0      # for one batch (all symbolic tests of one answer)
MEMORY_MB = 2048


class DecodeError(ValueError):
    """The output could not be decoded (malformed or disallowed content)."""


@dataclass(frozen=True)
class SympyValue:
    """A decoded sympy expression (kept apart from plain numbers)."""

    expr: Any


@dataclass(frozen=True)
class SympyTree:
    """A symbolic output as it came back, not yet built: building it can itself be the
    attack (sympy evaluates `binomial(10**6, 5*10**5)` or `2**(10**11)` eagerly), so
    the host never does. It is built and compared in a separate, limited process
    (`sympy_worker`)."""

    tree: Any


def _check_tree(tree: Any) -> None:
    """Size checks on a raw sympy tree, without building anything (iterative)."""
    todo, count = [tree], 0
    while todo:
        node = todo.pop()
        count += 1
        if count > MAX_SYMPY_NODES:
            raise DecodeError(f"sympy expression larger than {MAX_SYMPY_NODES} nodes")
        if not isinstance(node, dict):
            raise DecodeError("bad sympy node")
        for key in ("int", "sym"):
            if key in node and len(str(node[key])) > 400:
                raise DecodeError(f"sympy {key} too long")
        if "rat" in node and (not isinstance(node["rat"], list) or len(node["rat"]) != 2
                              or any(len(str(x)) > 400 for x in node["rat"])):
            raise DecodeError("bad rational")
        args = node.get("args", [])
        if not isinstance(args, list):
            raise DecodeError("bad sympy node")
        todo.extend(args)


def contains_sympy(value: Any) -> bool:
    """Whether a decoded value holds a symbolic part anywhere (iterative)."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, SympyTree | SympyValue):
            return True
        if isinstance(v, list | tuple):
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
    return False


def _float(v: Any) -> float:
    if isinstance(v, str):
        if v in ("nan", "inf", "-inf"):
            return float(v)
        raise DecodeError(f"bad float {v!r}")
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise DecodeError(f"bad float {v!r}")
    return float(v)


_SYMPY_FUNCS = {
    "Add", "Mul", "Pow", "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "Abs", "sign", "re", "im",
    "conjugate", "erf", "erfc", "gamma", "zeta", "besselj", "bessely", "besseli", "besselk",
    "Heaviside", "Min", "Max", "floor", "ceiling", "cot", "sec", "csc", "factorial",
    "binomial", "elliptic_k", "elliptic_e", "polylog",
}
_SYMPY_SINGLETONS = {"Pi", "Exp1", "ImaginaryUnit", "Infinity", "NegativeInfinity", "Half",
                     "One", "Zero", "NegativeOne", "EulerGamma", "ComplexInfinity", "NaN"}


def _sympy_from_tree(node: Any, counter: list[int]) -> Any:
    import sympy

    counter[0] += 1
    if counter[0] > MAX_SYMPY_NODES:
        raise DecodeError(f"sympy expression larger than {MAX_SYMPY_NODES} nodes")
    if not isinstance(node, dict):
        raise DecodeError("bad sympy node")
    if "sym" in node:
        name = str(node["sym"])
        if not name.isidentifier() and not all(c.isalnum() or c in "_{}^\\" for c in name):
            raise DecodeError(f"bad symbol name {name!r}")
        return sympy.Symbol(name, positive=True)
    if "int" in node:
        text = str(node["int"])
        if len(text) > 400:
            raise DecodeError("integer too long")
        return sympy.Integer(int(text))
    if "rat" in node:
        p, q = node["rat"]
        if len(str(p)) > 400 or len(str(q)) > 400:
            raise DecodeError("rational too long")
        return sympy.Rational(int(p), int(q))
    if "float" in node:
        return sympy.Float(_float(node["float"]))
    cls = node.get("cls")
    if cls in _SYMPY_SINGLETONS:
        return getattr(sympy.S, cls)
    if cls in _SYMPY_FUNCS:
        args = [_sympy_from_tree(a, counter) for a in node.get("args", [])]
        return getattr(sympy, cls)(*args)
    raise DecodeError(f"sympy class {cls!r} is not supported")


def decode_value(item: Any, depth: int = 0, *, build_sympy: bool = False) -> Any:
    """Tagged JSON -> Python value (numbers, complex, numpy arrays, tuples, lists,
    dicts, bools, strings, None; symbolic parts as SympyTree, or built into
    SympyValue with `build_sympy`, which only the limited worker process does)."""
    if depth > 60:
        raise DecodeError("nested too deeply")
    if not isinstance(item, dict) or "t" not in item:
        raise DecodeError("malformed value")
    t = item["t"]
    v = item.get("v")
    if t == "none":
        return None
    if t == "bool":
        if not isinstance(v, bool):
            raise DecodeError("bad bool")
        return v
    if t == "int":
        text = str(v)
        if len(text) > 400:
            raise DecodeError("integer too long")
        return int(text)
    if t == "float":
        return _float(v)
    if t == "complex":
        return complex(_float(item.get("re")), _float(item.get("im")))
    if t == "str":
        if not isinstance(v, str):
            raise DecodeError("bad string")
        return v
    if t in ("list", "tuple"):
        if not isinstance(v, list):
            raise DecodeError("bad sequence")
        seq = [decode_value(x, depth + 1, build_sympy=build_sympy) for x in v]
        return tuple(seq) if t == "tuple" else seq
    if t == "dict":
        if not isinstance(v, list):
            raise DecodeError("bad dict")
        out = {}
        for pair in v:
            key = decode_value(pair[0], depth + 1, build_sympy=build_sympy)
            if isinstance(key, list | dict | np.ndarray | SympyValue | SympyTree):
                raise DecodeError("unhashable dict key")
            out[key] = decode_value(pair[1], depth + 1, build_sympy=build_sympy)
        return out
    if t == "array":
        shape = tuple(int(s) for s in item.get("shape", []))
        flat = [decode_value(x, depth + 1) for x in v]
        if any(isinstance(x, complex) for x in flat):
            arr = np.array(flat, dtype=complex)
        elif all(isinstance(x, bool) for x in flat) and flat:
            arr = np.array(flat, dtype=bool)
        else:
            arr = np.array(flat, dtype=float)
        if int(np.prod(shape)) != arr.size:
            raise DecodeError("array shape does not match its data")
        return arr.reshape(shape)
    if t == "sympy":
        if build_sympy:
            return SympyValue(_sympy_from_tree(v, [0]))
        _check_tree(v)
        return SympyTree(v)
    raise DecodeError(f"unknown tag {t!r}")


def encode_for_cache(value: Any) -> Any:
    """Encode a decoded output again (sympy values through their expression)."""
    if isinstance(value, SympyTree):
        return {"t": "sympy", "v": value.tree}
    if isinstance(value, SympyValue):
        import sympy  # noqa: F401 - makes encode_value see sympy

        return encode_value(value.expr)
    if isinstance(value, list | tuple):
        return {"t": "tuple" if isinstance(value, tuple) else "list",
                "v": [encode_for_cache(v) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[encode_value(k), encode_for_cache(v)]
                                   for k, v in value.items()]}
    return encode_value(value)


def _is_number(x: Any) -> bool:
    return (isinstance(x, int | float | complex | np.number)) and not isinstance(x, bool | np.bool_)


def _numbers_close(got: Any, expected: Any, rtol: float, atol: float) -> tuple[bool, str]:
    g, e = complex(got), complex(expected)
    for part_g, part_e in ((g.real, e.real), (g.imag, e.imag)):
        if math.isnan(part_e) or math.isnan(part_g):
            if not (math.isnan(part_e) and math.isnan(part_g)):
                return False, f"expected {expected!r}, got {got!r}"
        elif math.isinf(part_e) or math.isinf(part_g):
            if part_e != part_g:
                return False, f"expected {expected!r}, got {got!r}"
    if any(math.isnan(x) or math.isinf(x) for x in (g.real, g.imag, e.real, e.imag)):
        # the non-finite parts matched exactly; compare the finite parts
        g = complex(0 if not math.isfinite(g.real) else g.real,
                    0 if not math.isfinite(g.imag) else g.imag)
        e = complex(0 if not math.isfinite(e.real) else e.real,
                    0 if not math.isfinite(e.imag) else e.imag)
    if abs(g - e) <= atol + rtol * abs(e):
        return True, ""
    rel = abs(g - e) / abs(e) if e != 0 else math.inf
    return False, f"expected {expected!r}, got {got!r} (relative error {rel:.3g})"


def _as_array(x: Any) -> np.ndarray | None:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, list | tuple) and x and all(_is_number(v) for v in x):
        return np.asarray(x, dtype=complex if any(isinstance(v, complex) for v in x) else float)
    return None


def compare_values(got: Any, expected: Any, *, rtol: float, atol: float,
                   seed: int = 0) -> tuple[bool, str]:
    """(agree, reason) for an answer's output against the reference output."""
    if isinstance(expected, SympyTree) or isinstance(got, SympyTree):
        return compare_isolated([(got, expected, seed)], rtol=rtol, atol=atol)[0]
    if isinstance(expected, SympyValue) or isinstance(got, SympyValue):
        return _compare_sympy(got, expected, rtol=rtol, atol=atol, seed=seed)
    if isinstance(expected, bool | np.bool_) or isinstance(got, bool | np.bool_):
        if isinstance(expected, bool | np.bool_) and isinstance(got, bool | np.bool_):
            return (bool(got) == bool(expected)), f"expected {expected!r}, got {got!r}"
        return False, f"expected {type(expected).__name__} {expected!r}, got {got!r}"
    if expected is None or isinstance(expected, str):
        return got == expected and type(got) is type(expected), f"expected {expected!r}, got {got!r}"
    if _is_number(expected):
        if not _is_number(got):
            return False, f"expected a number, got {type(got).__name__}"
        return _numbers_close(got, expected, rtol, atol)
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return False, f"expected a dict, got {type(got).__name__}"
        if set(got) != set(expected):
            return False, f"expected keys {sorted(map(str, expected))}, got {sorted(map(str, got))}"
        for key in expected:
            ok, why = compare_values(got[key], expected[key], rtol=rtol, atol=atol, seed=seed)
            if not ok:
                return False, f"[{key!r}]: {why}"
        return True, ""
    exp_arr, got_arr = _as_array(expected), _as_array(got)
    if exp_arr is not None:
        if got_arr is None:
            return False, f"expected a sequence of numbers, got {type(got).__name__}"
        if got_arr.shape != exp_arr.shape:
            return False, f"expected shape {exp_arr.shape}, got {got_arr.shape}"
        if got_arr.dtype == bool or exp_arr.dtype == bool:
            ok = got_arr.dtype == exp_arr.dtype and bool(np.all(got_arr == exp_arr))
            return ok, "boolean arrays differ"
        for idx in np.ndindex(exp_arr.shape):
            ok, why = _numbers_close(got_arr[idx], exp_arr[idx], rtol, atol)
            if not ok:
                return False, f"element {idx}: {why}"
        return True, ""
    if isinstance(expected, list | tuple):
        if not isinstance(got, list | tuple | np.ndarray):
            return False, f"expected a sequence, got {type(got).__name__}"
        if len(got) != len(expected):
            return False, f"expected {len(expected)} items, got {len(got)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            ok, why = compare_values(g, e, rtol=rtol, atol=atol, seed=seed)
            if not ok:
                return False, f"item {i}: {why}"
        return True, ""
    return False, f"cannot compare {type(got).__name__} with {type(expected).__name__}"


def _compare_sympy(got: Any, expected: Any, *, rtol: float, atol: float,
                   seed: int) -> tuple[bool, str]:
    import sympy

    e = expected.expr if isinstance(expected, SympyValue) else expected
    g = got.expr if isinstance(got, SympyValue) else got
    if not (isinstance(g, sympy.Basic) or _is_number(g)):
        return False, f"expected a sympy expression, got {type(got).__name__}"
    e, g = sympy.sympify(e), sympy.sympify(g)
    diff = g - e
    try:
        if sympy.simplify(diff) == 0:
            return True, ""
    except Exception:  # noqa: BLE001 - fall through to numeric sampling
        pass
    symbols = sorted(diff.free_symbols, key=str)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        point = {s: sympy.Float(rng.uniform(0.5, 2.0)) for s in symbols}
        try:
            gv = complex(g.evalf(subs=point))
            ev = complex(e.evalf(subs=point))
        except (TypeError, ValueError):
            return False, "expression does not evaluate to a number"
        if not (cmath.isfinite(gv) and cmath.isfinite(ev)):
            return False, "expression is not finite at a sample point"
        if abs(gv - ev) > atol + rtol * abs(ev):
            return False, f"expected {e}, got {g} (differ at {point})"
    return True, ""


def relative_difference(got: Any, expected: Any) -> float:
    """How far `got` is from `expected`: the largest |got - expected| / |expected| over
    the numbers they hold (0 where both are equal, inf where one is NaN or infinite and
    the other not, or where the structures or non-numeric parts differ). Reported by
    `tpbench check` to show how visible a wrong answer's slip is on a test input."""
    if isinstance(got, SympyTree | SympyValue) or isinstance(expected, SympyTree | SympyValue):
        return 0.0 if got == expected else math.inf
    if _is_number(got) and _is_number(expected):
        g, e = complex(got), complex(expected)
        if cmath.isnan(g) or cmath.isnan(e):
            return 0.0 if cmath.isnan(g) and cmath.isnan(e) else math.inf
        if cmath.isinf(g) or cmath.isinf(e):
            return 0.0 if g == e else math.inf
        diff = abs(g - e)
        if diff == 0:
            return 0.0
        return diff / abs(e) if e != 0 else math.inf
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return math.inf
        return max((relative_difference(got[k], expected[k]) for k in expected), default=0.0)
    if isinstance(expected, list | tuple | np.ndarray) and isinstance(got, list | tuple
                                                                      | np.ndarray):
        got_seq, exp_seq = np.asarray(got, dtype=object), np.asarray(expected, dtype=object)
        if got_seq.shape != exp_seq.shape:
            return math.inf
        return max((relative_difference(g, e) for g, e in zip(got_seq.reshape(-1),
                                                                exp_seq.reshape(-1),
                                                                strict=True)), default=0.0)
    try:
        same = bool(got == expected) and type(got) is type(expected)
    except (TypeError, ValueError):
        same = False
    return 0.0 if same else math.inf


def compare_isolated(pairs: list[tuple[Any, Any, int]], *, rtol: float, atol: float,
                     time_limit_s: float | None = None,
                     memory_mb: int | None = None) -> list[tuple[bool, str]]:
    """(agree, reason) for each (got, expected, seed), computed in a limited process
    (TIME_LIMIT_S and MEMORY_MB unless given)."""
    if not pairs:
        return []
    time_limit_s = TIME_LIMIT_S if time_limit_s is None else time_limit_s
    memory_mb = MEMORY_MB if memory_mb is None else memory_mb
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
