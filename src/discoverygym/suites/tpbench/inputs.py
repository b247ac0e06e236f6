"""Test inputs of a problem: the explicit cases (edge regimes) followed by seeded draws
over the declared argument ranges, optionally a one-argument-at-a-time sweep.

Conditions between arguments ("d > R", "b > 1.5*a") are problem data, evaluated by a
small arithmetic interpreter over the argument values (never by `eval`)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .problem import Argument, Problem

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow, ast.Mod: operator.mod}
_CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
           ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCS = {"abs": abs, "sqrt": math.sqrt, "min": min, "max": max, "exp": math.exp,
          "log": math.log, "cos": math.cos, "sin": math.sin}
_CONSTS = {"pi": math.pi, "e": math.e}


def _eval_node(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in _CONSTS:
            return _CONSTS[node.id]
        raise ValueError(f"unknown name '{node.id}'")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval_node(node.left, env), _eval_node(node.right, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
        value = _eval_node(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else (
            value if isinstance(node.op, ast.UAdd) else not value)
    if isinstance(node, ast.BoolOp):
        values = [_eval_node(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval_node(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            if type(op) not in _CMPOPS:
                raise ValueError("only <, <=, >, >=, ==, != comparisons are allowed")
            right = _eval_node(comp, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        return _FUNCS[node.func.id](*(_eval_node(a, env) for a in node.args))
    raise ValueError(f"unsupported expression element {type(node).__name__}")


def evaluate_condition(text: str, env: dict[str, Any]) -> bool:
    """Evaluate an arithmetic condition over argument values."""
    return bool(_eval_node(ast.parse(text, mode="eval"), env))


def check_conditions(conditions: Iterable[str], names: list[str]) -> None:
    """Raise ValueError if a condition does not parse or uses unknown names."""
    for text in conditions:
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise ValueError(f"condition {text!r} does not parse: {exc.msg}") from exc
        for node in ast.walk(tree):
            if (isinstance(node, ast.Name) and node.id not in names and node.id not in _CONSTS
                    and node.id not in _FUNCS):
                raise ValueError(f"condition {text!r} uses unknown name '{node.id}'")


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
    rng = np.random.default_rng([plan.seed, 2718])
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
