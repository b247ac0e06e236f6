"""Figures in the docs are written by the command that measures them, between markers.

A figure block sits between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in a markdown
file; the command that produced the figure replaces what lies between them and nothing
else. A marker missing, doubled or out of order is an error and the file is left as it
was: a writer never guesses where a figure goes."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

# A marker name: what `<!-- ...:begin -->` may hold (no `-->`, no spaces, no newlines).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")


class MarkerError(ValueError):
    """The file lacks exactly one well-ordered pair of the named markers."""


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the block called `name`."""
    if not _NAME.fullmatch(name) or name.endswith(("-", ":")):
        raise MarkerError(f"marker name {name[:100]!r} is not of the form 'word:word-2'")
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_block(text: str, name: str, block: str) -> str:
    """`text` with the lines between the `name` markers replaced by `block`."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise MarkerError(f"needs exactly one {begin} and one {end} (found "
                          f"{text.count(begin)} and {text.count(end)})")
    head, rest = text.split(begin, 1)
    if end not in rest:
        raise MarkerError(f"{end} comes before {begin}")
    _, tail = rest.split(end, 1)
    body = block.strip("\n")
    if "<!--" in body:
        # The block would hold a marker (or start a comment that swallows the end marker).
        raise MarkerError("the block holds an HTML comment; escape its text first")
    return f"{head}{begin}\n{body}\n{end}{tail}"


def read_block(text: str, name: str) -> str | None:
    """What lies between the `name` markers of `text` (None if they are not there)."""
    begin, end = markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        return None
    rest = text.split(begin, 1)[1]
    if end not in rest:
        return None
    return rest.split(end, 1)[0].strip("\n")


def write_block(path: str | os.PathLike, name: str, block: str) -> None:
    """Replace the `name` block of the file at `path`, atomically (a reader never sees
    half a file; a failure leaves the old file)."""
    target = Path(path)
    new = replace_block(target.read_text(encoding="utf-8"), name, block)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(new)
        os.chmod(tmp, target.stat().st_mode & 0o777)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
