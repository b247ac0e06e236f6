"""Bounded handling of values that came from an agent (tool arguments, lines a sandboxed
process printed, files it wrote). Everything here is iterative, never recursive, and
caps sizes before the expensive step, so hostile input (10,000-deep nesting, 10 MB
strings, 10**400) ends in a short `UnsafeInput` message, never in a RecursionError, a
hang or an exhausted host."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: How much of a hostile value an error message may quote.
QUOTE_CHARS = 200


class UnsafeInput(ValueError):
    """A value broke a bound (size, depth, count, range); the message says which."""


@dataclass(frozen=True)
class Bounds:
    """Caps on a decoded value: nesting depth, containers plus leaves, characters in all
    strings together, and integers a float can hold (|n| < 2**1024) unless `big_ints`."""

    max_depth: int = 32
    max_items: int = 200_000
    max_chars: int = 2_000_000
    big_ints: bool = False


DEFAULT_BOUNDS = Bounds()


def quote(value: Any, limit: int = QUOTE_CHARS) -> str:
    """repr(value) cut to `limit` characters (with the full length said), safe for any
    size: long strings are cut before repr is taken."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"... ({len(value)} characters)"
    if isinstance(value, list | tuple | dict) and len(value) > 20:
        return f"<{type(value).__name__} of {len(value)} items>"
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # 10,000-deep containers, 10**5000 ints
        return f"<{type(value).__name__}>"
    if len(text) > limit:
        return text[:limit] + f"... ({len(text)} characters)"
    return text


def clip(text: str, limit: int = 500) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" [... {len(text) - limit} more characters]"


def check_value(value: Any, bounds: Bounds = DEFAULT_BOUNDS, what: str = "the value") -> None:
    """Walk `value` (dicts, lists, tuples, scalars) iteratively; raise UnsafeInput at the
    first bound it breaks: nesting deeper than max_depth, more than max_items nodes,
    more than max_chars of strings (keys included), an integer no float can hold, a
    NaN or infinity, or a type JSON cannot carry."""
    items = chars = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        items += 1
        if items > bounds.max_items:
            raise UnsafeInput(f"{what} has more than {bounds.max_items} elements")
        if depth > bounds.max_depth:
            raise UnsafeInput(f"{what} is nested more than {bounds.max_depth} levels deep")
        if isinstance(node, str):
            chars += len(node)
            if chars > bounds.max_chars:
                raise UnsafeInput(f"{what} holds more than {bounds.max_chars} characters "
                                  "of text")
        elif isinstance(node, bool) or node is None:
            pass
        elif isinstance(node, int):
            if not bounds.big_ints and node.bit_length() > 1023:
                raise UnsafeInput(f"{what} holds an integer too large for a float "
                                  f"({node.bit_length()} bits); numbers must be below 1e308")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise UnsafeInput(f"{what} holds {node!r}; only finite numbers are allowed")
        elif isinstance(node, Mapping):
            for key, item in node.items():
                if not isinstance(key, str):
                    raise UnsafeInput(f"{what} has a non-text key {quote(key)}")
                chars += len(key)
                stack.append((item, depth + 1))
            if chars > bounds.max_chars:
                raise UnsafeInput(f"{what} holds more than {bounds.max_chars} characters "
                                  "of text")
        elif isinstance(node, list | tuple):
            if len(node) + items > bounds.max_items:
                raise UnsafeInput(f"{what} has more than {bounds.max_items} elements")
            stack.extend((item, depth + 1) for item in node)
        else:
            raise UnsafeInput(f"{what} holds a {type(node).__name__}, which is not a JSON "
                              "value")


def loads(text: str | bytes, bounds: Bounds = DEFAULT_BOUNDS, *, max_text: int = 16_000_000,
          what: str = "the data") -> Any:
    """json.loads with bounds: text longer than `max_text` is refused before parsing; a
    parser recursion failure, NaN/Infinity literals and any breach of `bounds` raise
    UnsafeInput. Integers beyond a float's range are refused unless `bounds.big_ints`."""
    if len(text) > max_text:
        raise UnsafeInput(f"{what} is {len(text)} characters long; at most {max_text} are read")
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")

    def no_constant(name: str) -> Any:
        raise UnsafeInput(f"{what} holds {name}; only finite numbers are allowed")

    def bounded_int(digits: str) -> int:
        if len(digits) > 400 and not bounds.big_ints:  # int() of huge text is quadratic
            raise UnsafeInput(f"{what} holds an integer of {len(digits)} digits")
        return int(digits)

    try:
        value = json.loads(text, parse_constant=no_constant, parse_int=bounded_int)
    except RecursionError:
        raise UnsafeInput(f"{what} is nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise UnsafeInput(f"{what} is not valid JSON ({exc.msg} at position {exc.pos})") from None
    check_value(value, bounds, what)
    return value
