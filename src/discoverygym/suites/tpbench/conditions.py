"""Conditions between a problem's arguments ("d > R", "b > 1.5*a"): problem data,
checked when a problem loads and evaluated by a small arithmetic interpreter over the
argument values (never by `eval`)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Iterable
from typing import Any

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
