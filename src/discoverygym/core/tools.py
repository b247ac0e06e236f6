"""Tool specifications in the OpenAI function format, results, and argument checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jsonschema

from .bounded import DEFAULT_BOUNDS, Bounds, UnsafeInput, check_value, clip
from .errors import ToolInputError


@dataclass(frozen=True)
class ToolSpec:
    """One tool an agent may call: a name, what it does, and a JSON-Schema for its
    arguments (an object schema)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    #: Caps on the arguments (depth, element count, characters of text); a tool that
    #: takes large text, such as a file's content, raises `max_chars`.
    bounds: Bounds = DEFAULT_BOUNDS

    @cached_property
    def validator(self) -> jsonschema.Draft202012Validator:
        """The schema's validator, built once per tool: building it on every call was a
        third of a gravity `observe` call's time."""
        return jsonschema.Draft202012Validator(self.parameters)

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


def validate_arguments(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Check `args` against the tool's bounds (depth, size, finite numbers a float can
    hold) and then its schema.

    Returns the arguments as a plain dict. Raises ToolInputError with a message meant
    for the agent (what was wrong, what the schema allows), never longer than a few
    hundred characters whatever the input was."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolInputError(
            f"Tool '{spec.name}' takes a JSON object of named arguments, got "
            f"{type(args).__name__}. Nothing was charged.")
    args = dict(args)
    try:
        check_value(args, spec.bounds, "the arguments")
    except UnsafeInput as exc:
        raise ToolInputError(f"Invalid input to '{spec.name}': {exc}. Nothing was "
                             "charged.") from None
    errors = sorted(spec.validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        allowed = ", ".join(sorted(spec.parameters.get("properties", {}))) or "none"
        # jsonschema quotes the offending value whole; a 10 MB argument must not come back
        raise ToolInputError(
            f"Invalid input to '{spec.name}': {clip(_path(first), 120)}: "
            f"{clip(first.message, 300)}. Arguments this tool takes: {clip(allowed, 200)}. "
            "Nothing was charged.")
    return args
