"""Verification of a written solution: take the last fenced Python block, run it in an
isolated process on every test input, and compare its outputs on the host with the
reference outputs (computed in a separate isolated process, cached per problem
version). Nothing that comes back is unpickled or evaluated: it is tagged JSON after a
random marker, decoded by `compare.decode_value`."""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ...core.bounded import Bounds, UnsafeInput, loads
from ...core.paths import cache_dir
from ...sandbox import SandboxUnavailable
from .compare import (
    DecodeError,
    compare_isolated,
    compare_values,
    contains_sympy,
    decode_value,
    encode_for_cache,
)
from .execute import MINIMUM_ISOLATION, ExecutionResult, execute_candidate
from .harness import build_script, encode_value
from .inputs import InputSet, generate_inputs
from .problem import Problem

VERDICTS = ("correct", "wrong", "error", "timeout", "no_code", "refused")

_FENCE = re.compile(r"```[ \t]*(python3?|py)?[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(text: str) -> str | None:
    """The last fenced code block marked python (or unmarked), else None."""
    blocks = [(lang, body) for lang, body in _FENCE.findall(text or "")]
    tagged = [body for lang, body in blocks if lang]
    candidates = tagged or [body for _, body in blocks]
    if not candidates or not candidates[-1].strip():
        return None
    return candidates[-1]


@dataclass
class RunOutcome:
    """Outputs of one isolated run: per input either ("ok", value) or ("error", text);
    or a failure of the whole run (`failure` in "error" | "timeout" | "refused": the
    host's sandbox is below the minimum and nothing ran)."""

    results: list[tuple[str, Any]]
    failure: str | None = None
    message: str = ""
    isolation: str = ""
    duration_s: float = 0.0


#: What one result line may hold (harness.MAX_ELEMENTS elements, tags included).
_RESULT_BOUNDS = Bounds(max_depth=100, max_items=2_000_000, max_chars=8_000_000)


def run_function(code: str, function: str, inputs: list[InputSet], *, time_limit_s: float,
                 memory_mb: int, minimum_isolation: str | None = MINIMUM_ISOLATION
                 ) -> RunOutcome:
    """Evaluate `function` defined by `code` on every input in one isolated process.
    Below `minimum_isolation` nothing runs: a "refused" failure that says why."""
    marker = "@@TPBENCH-" + secrets.token_hex(16) + "@@"
    script = build_script(marker, function, code)
    stdin = json.dumps({"inputs": [[encode_value(a) for a in inp.args] for inp in inputs]})
    try:
        res: ExecutionResult = execute_candidate(
            script, stdin.encode(), time_limit_s=time_limit_s, memory_mb=memory_mb,
            minimum_isolation=minimum_isolation)
    except SandboxUnavailable as exc:
        return RunOutcome([], "refused", f"not scored: {exc}", isolation=exc.level)
    base = {"isolation": res.isolation, "duration_s": res.duration_s}
    if res.timed_out:
        return RunOutcome([], "timeout", f"time limit of {time_limit_s:g} s exceeded", **base)
    text = res.stdout.decode("utf-8", errors="replace")
    pos = text.rfind(marker)
    stderr_tail = res.stderr.decode("utf-8", errors="replace")[-800:]
    if pos < 0:
        why = res.killed_reason or f"exit status {res.returncode}"
        return RunOutcome([], "error", f"the answer produced no results ({why}). "
                          f"stderr: {stderr_tail}", **base)
    line = text[pos + len(marker):].split("\n", 1)[0]
    try:
        # Agent code can print anything after a marker it found: bounded decoding.
        payload = loads(line, _RESULT_BOUNDS)
        if not isinstance(payload, dict):
            raise DecodeError("not an object")
        if payload.get("load_error"):
            return RunOutcome([], "error", payload["load_error"].strip(), **base)
        raw = payload["results"]
        if not isinstance(raw, list) or len(raw) != len(inputs):
            raise DecodeError("wrong number of results")
        results: list[tuple[str, Any]] = []
        for item in raw:
            if "ok" in item:
                results.append(("ok", decode_value(item["ok"])))
            else:
                results.append(("error", str(item.get("error", "unknown error")).strip()))
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, UnsafeInput) as exc:
        return RunOutcome([], "error", f"malformed results: {str(exc)[:300]}", **base)
    return RunOutcome(results, **base)


# ---- reference outputs (cached per problem version and test plan) -------------------
_MEMORY_CACHE: dict[str, list[Any]] = {}


class ReferenceError_(RuntimeError):
    """The reference failed on a test input: the problem itself is broken."""


def reference_outputs(problem: Problem) -> tuple[list[InputSet], list[Any]]:
    """The test inputs and the reference's outputs on them. The reference runs in its
    own isolated process (never with an answer); results are cached on disk."""
    inputs = generate_inputs(problem)
    key = f"{problem.id}-v{problem.version}-{problem.content_hash()[:20]}"
    if key in _MEMORY_CACHE:
        return inputs, _MEMORY_CACHE[key]
    path = cache_dir("tpbench", "reference_outputs") / f"{key}.json"
    if path.exists():
        try:
            outputs = [decode_value(x) for x in json.loads(path.read_text())]
            if len(outputs) == len(inputs):
                _MEMORY_CACHE[key] = outputs
                return inputs, outputs
        except (ValueError, DecodeError):
            pass  # a corrupt cache file is recomputed
    # The reference is trusted: it may run at any level (its outputs are computed
    # before any answer runs, and never in the same process).
    outcome = run_function(problem.reference, problem.function, inputs,
                           time_limit_s=max(problem.time_limit_s, 30.0), memory_mb=2048,
                           minimum_isolation=None)
    if outcome.failure:
        raise ReferenceError_(f"{problem.key}: reference failed to run: {outcome.message}")
    bad = [(inp.label, val) for inp, (kind, val) in zip(inputs, outcome.results, strict=True)
           if kind != "ok"]
    if bad:
        raise ReferenceError_(f"{problem.key}: reference raised on {bad[0][0]}: {bad[0][1]}")
    outputs = [val for _, val in outcome.results]
    encoded = [encode_for_cache(v) for v in outputs]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(encoded))
    tmp.replace(path)
    _MEMORY_CACHE[key] = outputs
    return inputs, outputs


# ---- verification ---------------------------------------------------------------------
@dataclass
class TestOutcome:
    """One test input's result: passed, and why not."""

    __test__ = False  # not a pytest test class

    label: str
    args: dict[str, Any]
    passed: bool
    message: str = ""


@dataclass
class Verification:
    """The verdict on one response, with per-test details."""

    verdict: str
    n_tests: int = 0
    n_passed: int = 0
    tests: list[TestOutcome] = field(default_factory=list)
    error: str | None = None
    isolation: str = ""
    duration_s: float = 0.0
    #: the answer's raw outputs per input (host-side only; never in to_dict or a record)
    outputs: list[tuple[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"

    def to_dict(self, max_tests: int = 50) -> dict[str, Any]:
        data = asdict(self)
        data.pop("outputs", None)
        failed = [t for t in data["tests"] if not t["passed"]]
        data["tests"] = (failed + [t for t in data["tests"] if t["passed"]])[:max_tests]
        for t in data["tests"]:
            t["args"] = {k: repr(v) for k, v in t["args"].items()}
        return data


def compare_outputs(inputs: list[InputSet], names: list[str], expected: list[Any],
                    results: list[tuple[str, Any]], *, rtol: float,
                    atol: float, compare_limit_s: float | None = None) -> list[TestOutcome]:
    """One TestOutcome per input: the run's output against the expected output under
    rtol/atol. Tests with a symbolic part are compared together in one limited process
    (`compare_limit_s` seconds; default compare.TIME_LIMIT_S)."""
    tests = []
    symbolic: list[int] = []
    for i, (inp, exp, (kind, got)) in enumerate(zip(inputs, expected, results, strict=True)):
        if kind != "ok":
            tests.append(TestOutcome(inp.label, inp.as_dict(names), False, f"raised: {got}"))
            continue
        if contains_sympy(got) or contains_sympy(exp):
            symbolic.append(i)
            tests.append(TestOutcome(inp.label, inp.as_dict(names), False, "pending"))
            continue
        try:
            ok, why = compare_values(got, exp, rtol=rtol, atol=atol, seed=i)
        except Exception as exc:  # noqa: BLE001 - a comparison failure is a failed test
            ok, why = False, f"comparison failed: {type(exc).__name__}: {exc}"
        tests.append(TestOutcome(inp.label, inp.as_dict(names), ok, why))
    verdicts = compare_isolated([(results[i][1], expected[i], i) for i in symbolic],
                                rtol=rtol, atol=atol, time_limit_s=compare_limit_s)
    for i, (ok, why) in zip(symbolic, verdicts, strict=True):
        tests[i].passed, tests[i].message = ok, why
    return tests


def verify(problem: Problem, response: str, *,
           compare_limit_s: float | None = None) -> Verification:
    """Verify a written response against a problem's reference on every test input
    (`compare_limit_s`: the symbolic comparison's limit, for the audit's short runs)."""
    start = time.perf_counter()
    code = extract_code(response)
    if code is None:
        return Verification("no_code", error="the response holds no fenced Python code block")
    inputs, expected = reference_outputs(problem)
    outcome = run_function(code, problem.function, inputs, time_limit_s=problem.time_limit_s,
                           memory_mb=problem.memory_mb)
    names = [a.name for a in problem.arguments]
    if outcome.failure:
        return Verification(outcome.failure, n_tests=len(inputs), error=outcome.message,
                            isolation=outcome.isolation,
                            duration_s=time.perf_counter() - start)
    tests = compare_outputs(inputs, names, expected, outcome.results, rtol=problem.rtol,
                            atol=problem.atol, compare_limit_s=compare_limit_s)
    n_passed = sum(t.passed for t in tests)
    raised = [t for t in tests if t.message.startswith("raised:")]
    if n_passed == len(tests):
        verdict, error = "correct", None
    elif raised and len(raised) == len(tests):
        verdict, error = "error", raised[0].message
    else:
        verdict, error = "wrong", None
    return Verification(verdict, n_tests=len(tests), n_passed=n_passed, tests=tests,
                        error=error, isolation=outcome.isolation,
                        duration_s=time.perf_counter() - start, outputs=outcome.results)
