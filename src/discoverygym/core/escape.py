"""Escaping of strings that came from records or run directories for the place they are
shown: a terminal (through Rich), a markdown table, an HTML page.

Records may come from anyone (a leaderboard reads third parties' runs), and every
string in them (agent, model, answer, reason, details) was chosen by someone else. Shown
raw, Rich markup in it crashes a table or restyles it, an escape sequence moves the
cursor, clears the screen or plants a hyperlink in the reader's terminal, a `|` or a
newline adds a markdown row, and HTML runs as script. Each function here turns any value
into inert text for one of those places, cut to a bounded length first, so a 10 MB
string costs a table cell, not the reader's terminal."""

from __future__ import annotations

import html
import re
from typing import Any

#: Characters a table cell shows by default; a record may hold megabytes.
CELL_CHARS = 200

# Escape sequences in full (so their parameters do not stay behind as noise): CSI
# (ESC [ or the 8-bit 0x9B), OSC (ESC ] or 0x9D, ended by BEL or ST, which is what an
# OSC 8 hyperlink uses), the string commands DCS, SOS, PM and APC, and two-character
# escapes.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
# What is left after the sequences: C0 controls (tab and newline are handled apart),
# DEL, C1 controls, and the Unicode bidirectional overrides and isolates that make a
# line read differently from what it holds.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile(r"\r\n|[\r\n\t\v\f\u2028\u2029\x85]")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except (RecursionError, ValueError):  # 10,000-deep containers, 10**5000 ints
        return f"<{type(value).__name__}>"


def _bounded(value: Any, limit: int) -> str:
    """The value's text, cut well above `limit` before any regular expression runs."""
    return _text(value)[: 4 * limit + 64]


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending with "…" when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def strip_controls(text: str, *, keep_newlines: bool = False) -> str:
    """`text` without terminal escape sequences, C0 and C1 control characters and
    bidirectional overrides. Line breaks and tabs become spaces unless `keep_newlines`
    (then a newline stays a newline and the other breaks become one)."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    if keep_newlines:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    else:
        text = _LINE_BREAK.sub(" ", text)
    return _CONTROL.sub("", text)


# A spreadsheet runs a cell that starts with one of these as a formula
# (=HYPERLINK(...), +cmd|...); a leading apostrophe makes it text (OWASP's advice).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def for_csv(value: Any) -> Any:
    """A record's value as one csv cell opened in a spreadsheet: numbers as they are,
    strings without escape sequences or controls (newlines kept: csv quotes them) and
    with an apostrophe before a leading formula character, so the cell shows as text."""
    if not isinstance(value, str):
        return value
    text = strip_controls(value, keep_newlines=True)
    # some spreadsheets skip leading blanks before they look for a formula
    return "'" + text if text.lstrip(" ").startswith(_FORMULA_START) else text


def for_terminal(value: Any, limit: int = CELL_CHARS) -> str:
    """Any value as one inert line for Rich: no escape sequences or controls, Rich
    markup escaped (so "[bold]" prints as written and "[/]" cannot crash), at most
    `limit` characters of the original."""
    from rich.markup import escape

    return escape(clip(strip_controls(_bounded(value, limit)), limit))


def for_markdown(value: Any, limit: int = CELL_CHARS) -> str:
    """Any value as one markdown table cell: one line, `|` escaped so it cannot open a
    column, and the characters that start code, links, images or inline HTML escaped
    with a backslash, so the cell renders as the text it holds."""
    text = clip(strip_controls(_bounded(value, limit)), limit)
    return re.sub(r"([\\`|\[\]<>!])", r"\\\1", text)


def for_markdown_code(value: Any, limit: int = CELL_CHARS) -> str:
    """Any value as one markdown code span (outside a table): one line, fenced by more
    backticks than it holds in a row, so nothing inside can close it early."""
    text = clip(strip_controls(_bounded(value, limit)), limit)
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def for_html(value: Any, limit: int | None = CELL_CHARS) -> str:
    """Any value as HTML text (element content or a quoted attribute): controls and
    escape sequences removed, newlines kept (a <pre> shows them), `& < > " '` escaped.
    `limit=None` keeps the whole text (for values the platform itself wrote)."""
    text = _text(value) if limit is None else clip(_bounded(value, limit), limit)
    return html.escape(strip_controls(text, keep_newlines=True), quote=True)


_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
ALLOWED_SCHEMES = ("http", "https")
HREF_CHARS = 2000


def safe_href(url: Any) -> str | None:
    """An escaped href for a link taken from a record, or None when it must not be a
    link: only http, https and relative addresses pass. Browsers drop tabs, newlines and
    leading controls or spaces before they read a scheme ("java\\tscript:"), so the
    check reads the address the same way."""
    if not isinstance(url, str) or not url or len(url) > HREF_CHARS:
        return None
    as_read = re.sub(r"[\x00-\x20\x7f-\x9f]", "", url)
    match = _SCHEME.match(as_read)
    if not as_read or (match and match.group(1).lower() not in ALLOWED_SCHEMES):
        return None
    # The address itself keeps its spaces (encoded: "my file.html" still works) and
    # loses the controls; "%" cannot stand in a scheme, so this reads as it was checked.
    address = re.sub(r"[\x00-\x1f\x7f-\x9f]", "", url).strip().replace(" ", "%20")
    return html.escape(address, quote=True)
