"""A Rich table that fits the terminal without cutting a number or splitting a word.

Rich shrinks every column of a table wider than the terminal, and a shrunk cell ends in
"…" (`-0.…`) or breaks mid-word (`gravi` / `ty`). `fit_table` sizes the columns
itself: a number column is as wide as its widest cell (never cut); headers go one
word per line when one line is too wide; a text column folds at spaces and is at least as wide as its longest word
(up to `MAX_WORD`); and when the table still does not fit, whole columns are left out
from the right (the first `keep` stay) and the caption names them. Cells are shown as
given: escape strings from records before (core/escape.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: A text column is at least as wide as its longest word, up to this.
MAX_WORD = 24


def _words(text: str) -> list[str]:
    return _plain(text).split() or [""]


def _plain(cell: str) -> str:
    """The text a cell shows (its Rich markup read, not counted)."""
    from rich.text import Text

    return Text.from_markup(cell).plain


def _longest_word(cell: str) -> int:
    """The widest unbreakable piece of a cell (leading indentation sticks to its word)."""
    cell = _plain(cell)
    indent = len(cell) - len(cell.lstrip())
    words = _words(cell)
    return max(indent + len(words[0]), *(len(w) for w in words))


def fit_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]], *,
              numeric: set[int], width: int, caption: str | None = None,
              keep: int = 1, drop_first: Sequence[int] = ()) -> Any:
    """The table of `rows` (strings) under `headers`, columns `numeric` right-aligned
    and never cut, fitted to `width` columns as the module says; the columns of
    `drop_first` (text that tells rows apart least) are left out before any other."""
    from rich.table import Table

    def need(i: int, header_lines: bool) -> int:
        header = (max(len(w) for w in _words(headers[i])) if header_lines
                  else len(headers[i]))
        if i in numeric:
            return max([header, *(len(_plain(r[i])) for r in rows)])
        return max(header, min(MAX_WORD, max([0, *(_longest_word(r[i]) for r in rows)])))

    shown = list(range(len(headers)))

    def total(widths: dict[int, int]) -> int:  # each column: its width, padding, border
        return sum(widths[i] + 3 for i in shown) + 1

    # Headers on one line where that fits, else one word per line.
    split = total({i: need(i, False) for i in shown}) > width
    widths = {i: need(i, split) for i in shown}
    left_out: list[int] = []
    order = [i for i in drop_first if i >= keep] + [i for i in reversed(shown)
                                                    if i >= keep and i not in drop_first]
    while total(widths) > width and order:
        gone = order.pop(0)
        shown.remove(gone)
        left_out.append(gone)
    names = [" ".join(_words(headers[i])) for i in sorted(left_out)]
    note = (f"not shown at {width} columns: {', '.join(names)} (widen the terminal)"
            if left_out else None)
    table = Table(title=title, caption=" · ".join(c for c in (caption, note) if c) or None)
    for i in shown:
        header = "\n".join(_words(headers[i])) if split else headers[i]
        if i in numeric:
            table.add_column(header, justify="right", no_wrap=True, min_width=widths[i])
        else:
            table.add_column(header, overflow="fold", min_width=widths[i])
    for r in rows:
        table.add_row(*(r[i] for i in shown))
    return table
