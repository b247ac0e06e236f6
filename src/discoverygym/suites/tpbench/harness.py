"""The script that runs inside the isolated process: it defines the answer's code,
calls the required function on every test input (read from stdin as tagged JSON) and
writes the outputs as tagged JSON after a per-run random marker.

This file is sent as source text (see `build_script`), so it uses the standard library
only (numpy and sympy are looked up in `sys.modules`, never imported here). It holds
no reference outputs: the comparison happens on the host. The host also imports
`encode_value` from here to encode the test inputs it sends."""

from __future__ import annotations

import math
import sys

MAX_ELEMENTS = 200_000  # a bigger output is refused rather than shipped back
MAX_DEPTH = 40


def _float(x: float) -> object:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _sympy_tree(expr: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise ValueError("sympy expression nested too deeply")
    cls = type(expr).__name__
    if getattr(expr, "is_Symbol", False):
        return {"sym": str(expr)}
    if getattr(expr, "is_Integer", False):
        return {"int": str(int(expr))}
    if getattr(expr, "is_Rational", False):
        return {"rat": [str(expr.p), str(expr.q)]}
    if getattr(expr, "is_Float", False):
        return {"float": _float(float(expr))}
    args = getattr(expr, "args", ())
    return {"cls": cls, "args": [_sympy_tree(a, depth + 1) for a in args]}


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def add(self, k: int = 1) -> None:
        self.n += k
        if self.n > MAX_ELEMENTS:
            raise ValueError(f"output has more than {MAX_ELEMENTS} elements")


def encode_value(value: object, depth: int = 0, counter: _Counter | None = None) -> object:
    """Tagged JSON for a Python, numpy or sympy value (NaN/inf as strings)."""
    counter = counter or _Counter()
    counter.add()
    if depth > MAX_DEPTH:
        raise ValueError("output nested too deeply")
    if value is None:
        return {"t": "none"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, int):
        return {"t": "int", "v": str(value)}
    if isinstance(value, float):
        return {"t": "float", "v": _float(value)}
    if isinstance(value, complex):
        return {"t": "complex", "re": _float(value.real), "im": _float(value.imag)}
    if isinstance(value, str):
        return {"t": "str", "v": value}
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "biufc":
                raise TypeError(f"arrays of dtype {value.dtype} are not supported")
            counter.add(int(value.size))
            flat = [encode_value(x.item(), depth + 1, counter) for x in value.reshape(-1)]
            return {"t": "array", "shape": list(value.shape), "v": flat}
        if isinstance(value, np.generic):
            return encode_value(value.item(), depth, counter)
    sp = sys.modules.get("sympy")
    if sp is not None and isinstance(value, sp.Basic):
        if getattr(value, "is_number", False) and not value.free_symbols:
            try:
                return encode_value(complex(value) if value.is_real is not True
                                    else float(value), depth, counter)
            except (TypeError, ValueError):
                pass
        return {"t": "sympy", "v": _sympy_tree(value, 0)}
    if isinstance(value, tuple | list):
        return {"t": "tuple" if isinstance(value, tuple) else "list",
                "v": [encode_value(x, depth + 1, counter) for x in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[encode_value(k, depth + 1, counter),
                                    encode_value(v, depth + 1, counter)]
                                   for k, v in value.items()]}
    raise TypeError(f"cannot return a value of type {type(value).__name__}")


def _decode_input(item: object) -> object:
    """Inputs are scalars only: numbers, complex, bools, strings."""
    t = item["t"]  # type: ignore[index]
    v = item.get("v")  # type: ignore[union-attr]
    if t == "float":
        return float(v)
    if t == "int":
        return int(v)
    if t == "complex":
        return complex(float(item["re"]), float(item["im"]))  # type: ignore[index]
    if t in ("bool", "str"):
        return v
    if t == "none":
        return None
    raise ValueError(f"unsupported input tag {t}")


def run(marker: str, function: str, source: str) -> None:
    """Define the answer, evaluate it on every input from stdin, print the outputs."""
    import io
    import json
    import os
    import traceback

    request = json.loads(sys.stdin.read())
    inputs = [[_decode_input(a) for a in args] for args in request["inputs"]]
    out_fd = os.dup(1)  # the answer may replace or close sys.stdout; we keep our own
    sys.stdout = io.StringIO()
    payload: dict = {"results": [], "load_error": None}
    namespace: dict = {"__name__": "answer"}
    try:
        exec(compile(source, "<answer>", "exec"), namespace)  # noqa: S102 (isolated process)
        fn = namespace.get(function)
        if not callable(fn):
            raise NameError(f"the answer defines no function named '{function}'")
    except BaseException as exc:  # noqa: BLE001 - report any failure of the answer
        payload["load_error"] = "".join(traceback.format_exception_only(type(exc), exc))[-2000:]
        fn = None
    if fn is not None:
        for args in inputs:
            try:
                value = fn(*args)
                payload["results"].append({"ok": encode_value(value)})
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt | SystemExit):
                    text = f"{type(exc).__name__} raised by the answer"
                else:
                    text = "".join(traceback.format_exception_only(type(exc), exc))
                payload["results"].append({"error": text[-1000:]})
    data = ("\n" + marker + json.dumps(payload, allow_nan=False) + "\n").encode()
    while data:
        written = os.write(out_fd, data)
        data = data[written:]


def build_script(marker: str, function: str, source: str) -> str:
    """The complete script: this module's code plus a call of `run`."""
    with open(__file__, encoding="utf-8") as handle:
        body = handle.read()
    return (body + "\n\nrun(" + repr(marker) + ", " + repr(function) + ", " + repr(source)
            + ")\n")
