"""Tool specifications in the OpenAI function format, results, and argument checks."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from .errors import ToolInputError


@dataclass(frozen=True)
class ToolSpec:
    """One tool an agent may call: a name, what it does, and a JSON-Schema for its
    arguments (an object schema)."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def openai(self) -> dict[str, Any]:
        """The spec in the OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass
class ToolResult:
    """What a tool call returns to the agent. `text` is always present; `data` is an
    optional JSON-able payload for programmatic agents; `images` are PNG bytes that
    multimodal front-ends may show."""

    text: str
    data: Any = None
    is_error: bool = False
    images: list[bytes] = field(default_factory=list)


def _path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return "argument '" + ".".join(parts) + "'" if parts else "the arguments"


def _finite_check(value: Any, where: str) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolInputError(f"{where} contains {value!r}; only finite numbers are allowed.")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _finite_check(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _finite_check(item, f"{where}[{i}]")


def validate_arguments(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Check `args` against the tool's schema and reject NaN/inf anywhere.

    Returns the arguments as a plain dict. Raises ToolInputError with a message meant
    for the agent (what was wrong, what the schema allows)."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolInputError(
            f"Tool '{spec.name}' takes a JSON object of named arguments, got {type(args).__name__}."
        )
    args = dict(args)
    validator = jsonschema.Draft202012Validator(spec.parameters)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        allowed = ", ".join(sorted(spec.parameters.get("properties", {}))) or "none"
        raise ToolInputError(
            f"Invalid input to '{spec.name}': {_path(first)}: {first.message}. "
            f"Arguments this tool takes: {allowed}. Nothing was charged."
        )
    _finite_check(args, "argument")
    return args
