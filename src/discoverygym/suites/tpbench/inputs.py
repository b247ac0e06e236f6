"""Test inputs of a problem: the explicit cases (edge regimes) followed by seeded draws
over the declared argument ranges, optionally a one-argument-at-a-time sweep, each
honouring the problem's conditions between arguments (`conditions.py`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import streams
from .conditions import evaluate_condition
from .problem import Argument, Problem


@dataclass(frozen=True)
class InputSet:
    """One argument set: `label` says where it came from ("case 2", "sample 5")."""

    label: str
    args: tuple[Any, ...]

    def as_dict(self, names: list[str]) -> dict[str, Any]:
        return dict(zip(names, self.args, strict=True))


def _draw(arg: Argument, rng: np.random.Generator) -> Any:
    if arg.choices is not None:
        return arg.choices[int(rng.integers(len(arg.choices)))]
    if arg.type == "bool":
        return bool(rng.integers(2))
    lo, hi = arg.range  # type: ignore[misc]
    if arg.type == "int":
        return int(rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1))
    if arg.scale == "log":
        value = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    else:
        value = float(rng.uniform(lo, hi))
    if arg.type == "complex":
        ilo, ihi = arg.imag_range or (lo, hi)
        return complex(value, float(rng.uniform(ilo, ihi)))
    return value


def _coerce(arg: Argument, value: Any) -> Any:
    if arg.type == "float":
        return float(value)
    if arg.type == "int":
        return int(value)
    if arg.type == "complex":
        if isinstance(value, list | tuple):
            return complex(float(value[0]), float(value[1]))
        return complex(value)
    return value


def generate_inputs(problem: Problem) -> list[InputSet]:
    """All test inputs of a problem, deterministic in `problem.tests.seed`."""
    names = [a.name for a in problem.arguments]
    plan = problem.tests
    out = [InputSet(f"case {i}", tuple(_coerce(a, case[a.name]) for a in problem.arguments))
           for i, case in enumerate(plan.cases)]
    rng = np.random.default_rng([plan.seed, streams.TPBENCH_TEST_INPUTS])
    drawn = 0
    tries = 0
    while drawn < plan.samples:
        tries += 1
        if tries > 200 * max(plan.samples, 1):
            raise ValueError(f"{problem.key}: cannot draw {plan.samples} samples that satisfy "
                             f"{list(plan.require)}; widen the ranges.")
        values = tuple(_draw(a, rng) for a in problem.arguments)
        env = dict(zip(names, values, strict=True))
        if all(evaluate_condition(c, env) for c in plan.require):
            out.append(InputSet(f"sample {drawn}", values))
            drawn += 1
    if plan.sweep:
        out.extend(_sweep(problem, rng))
    return out


def _sweep(problem: Problem, rng: np.random.Generator) -> list[InputSet]:
    """Vary each argument alone (three values) around a base point inside the ranges,
    so an answer that ignores any argument the reference uses cannot pass."""
    names = [a.name for a in problem.arguments]
    for _ in range(500):
        base = [_draw(a, rng) for a in problem.arguments]
        if all(evaluate_condition(c, dict(zip(names, base, strict=True)))
               for c in problem.tests.require):
            break
    else:
        return []
    out = []
    for i, arg in enumerate(problem.arguments):
        kept = 0
        for _ in range(50):
            if kept == 3:
                break
            values = list(base)
            values[i] = _draw(arg, rng)
            if values[i] == base[i] or not all(
                    evaluate_condition(c, dict(zip(names, values, strict=True)))
                    for c in problem.tests.require):
                continue
            out.append(InputSet(f"sweep {arg.name} {kept}", tuple(values)))
            kept += 1
    return out
