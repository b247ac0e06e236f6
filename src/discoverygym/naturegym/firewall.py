"""The information firewall derived from a record: what of A, D and the source may not
appear in a package's `problem/` (what the agent sees).

Four rules, each a `Finding` with rule "record-firewall" naming its file:

- `method`: the withheld method's name and aliases (case-insensitive), and its code
  identifiers (as whole words);
- `source`: a run of SOURCE_RUN_WORDS consecutive words shared with the source's text;
- `hidden`: every declared hidden value, ground truth and generator parameter alike,
  whatever its number of digits ("0.03" for alpha = 0.03): as a number anywhere in
  the prose (problem/ outside data/), and as a field or column of that name in the
  data files (a JSON field however coarsely rounded: "alpha": 0.0312 for 0.031214...);
- `output`: a file of the method's outputs, present or named in `problem/`.

`package check`'s own firewall (check.py) still runs beside it: it needs no record, but
it ignores one-significant-digit values. Not covered here: a hidden value written in
words ("three hundredths") or as a percentage, and a paraphrase of the source."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from .format.check import NUMBER, Finding
from .record import Record

SOURCE_RUN_WORDS = 10
MAX_TEXT_BYTES = 5_000_000
MAX_SOURCE_CHARS = 4_000_000
PROSE_SUFFIXES = {".md", ".txt", ".rst", ".html", ""}
TEXT_SUFFIXES = PROSE_SUFFIXES | {".csv", ".tsv", ".json", ".dat", ".py", ".yaml", ".yml"}
_WORD = re.compile(r"[a-z0-9]+")
RULE = "record-firewall"


def _text_files(problem: Path) -> list[Path]:
    return [p for p in sorted(problem.rglob("*")) if p.is_file() and not p.is_symlink()
            and p.suffix.lower() in TEXT_SUFFIXES]


def _read_text(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    with path.open("rb") as fh:
        return fh.read(limit).decode(errors="replace")


def _is_data(path: Path, problem: Path) -> bool:
    rel = path.relative_to(problem).parts
    return bool(rel) and rel[0] in ("data", "data_archives")


def _numbers(text: str) -> list[float]:
    out = []
    for token in NUMBER.findall(text):
        try:
            value = float(token)
        except ValueError:
            continue
        if math.isfinite(value):
            out.append(value)
    return out


def _key(value: float) -> float:
    """A number rounded to 12 significant digits: "0.030" and "3e-2" meet, and so do a
    value and its float rounding."""
    return float(f"{value:.12g}")


def _same(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _rounds_to(hidden: float, value: float) -> bool:
    """`value` is `hidden` written with some number of significant digits (1 to 17):
    a field named after a hidden value leaks it however coarsely it is rounded."""
    return any(_same(float(f"{hidden:.{digits}g}"), value) for digits in range(1, 18))


def _word_runs(text: str, n: int = SOURCE_RUN_WORDS) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[k:k + n]) for k in range(len(words) - n + 1)}


def json_fields(value: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """(key, value) pairs of a JSON document, at most 32 levels deep."""
    if depth > 32:
        return []
    if isinstance(value, dict):
        pairs = list(value.items())
        for v in value.values():
            pairs += json_fields(v, depth + 1)
        return pairs
    if isinstance(value, list):
        return [p for v in value for p in json_fields(v, depth + 1)]
    return []


def method_terms(record: Record) -> list[tuple[str, str, bool]]:
    """(term, what, whole_word) for the method's name, aliases and code identifiers."""
    a = record.data["A"]
    terms = [(a["name"], "method name", False)]
    terms += [(alias, "method alias", False) for alias in a.get("aliases", [])]
    terms += [(ident, "code identifier", True) for ident in a.get("identifiers", [])]
    return [(t, what, whole) for t, what, whole in terms if len(t.strip()) >= 3]


def _mentions(text: str, term: str, whole_word: bool) -> bool:
    if whole_word:
        return re.search(r"(?<![\w])" + re.escape(term) + r"(?![\w])", text) is not None
    return term.lower() in text.lower()


def hidden_values(record: Record) -> list[tuple[str, str, float]]:
    """(instance, name, value) of every declared hidden value, zero left out (every
    text holds a 0)."""
    return [(inst, name, float(value))
            for inst, values in record.data["D"]["hidden"].items()
            for name, value in values.items() if value != 0]


def record_firewall_findings(record: Record, package_root: Path) -> list[Finding]:
    """Every leak of the record's withheld material into `package_root/problem/`."""
    problem = Path(package_root) / "problem"
    if not problem.is_dir():
        return [Finding(RULE, "problem", "missing")]
    root = Path(package_root)
    out: list[Finding] = []
    terms = method_terms(record)
    hidden = hidden_values(record)
    source_text = str(record.data["source"].get("text") or "")[:MAX_SOURCE_CHARS]
    source_runs = _word_runs(source_text) if source_text else set()
    outputs = set(record.data["A"].get("outputs", []))
    for f in sorted(problem.rglob("*")):
        if f.name in outputs and not f.is_dir():
            out.append(Finding(RULE, str(f.relative_to(root)),
                               f"is an output file of the withheld method ({f.name!r})"))
    for f in _text_files(problem):
        rel = str(f.relative_to(root))
        prose = not _is_data(f, problem) or f.suffix.lower() in PROSE_SUFFIXES
        if f.stat().st_size > MAX_TEXT_BYTES:
            # Prose this long is not read whole, so it is not passed unread: a finding.
            # A large data table is read for its header only.
            if prose:
                out.append(Finding(RULE, rel, f"is over {MAX_TEXT_BYTES} bytes of prose, too "
                                   "long to check"))
            else:
                out += _data_field_findings(f, rel, _read_text(f, 65_536), hidden)
            continue
        text = _read_text(f)
        for term, what, whole in terms:
            if _mentions(text, term, whole):
                out.append(Finding(RULE, rel, f"names the withheld method's {what} {term!r}"))
        for name in outputs:
            if name in text:
                out.append(Finding(RULE, rel, f"names the method's output file {name!r}"))
        if source_runs and prose:
            shared = _word_runs(text) & source_runs
            if shared:
                run = " ".join(min(shared))
                out.append(Finding(RULE, rel, f"shares {len(shared)} runs of "
                                   f"{SOURCE_RUN_WORDS} words with the source ({run!r} ...)"))
        if prose:
            # One set lookup per hidden value: a 5 MB text against a large record stays fast.
            numbers = {_key(n) for n in _numbers(text)}
            leaked = sorted({f"{inst}.{name} = {value:g}" for inst, name, value in hidden
                             if _key(value) in numbers})
            if leaked:
                out.append(Finding(RULE, rel, f"holds hidden values: {', '.join(leaked[:5])}"))
        else:
            out += _data_field_findings(f, rel, text, hidden)
    return out


def _data_field_findings(path: Path, rel: str, text: str,
                         hidden: list[tuple[str, str, float]]) -> list[Finding]:
    """A data file that carries a hidden value under its own name: a JSON field, or a
    CSV/TSV column headed by it."""
    names = {name for _, name, _ in hidden}
    leaked: set[str] = set()
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return []
        for key, value in json_fields(doc):
            if key in names and isinstance(value, int | float) and not isinstance(value, bool):
                leaked |= {f"{inst}.{name}" for inst, name, v in hidden
                           if name == key and _rounds_to(v, float(value))}
    elif suffix in (".csv", ".tsv"):
        header = text.split("\n", 1)[0]
        columns = {c.strip().strip('"') for c in re.split(r"[,\t]", header)}
        leaked |= {f"column {name!r}" for name in names & columns}
    if not leaked:
        return []
    return [Finding(RULE, rel, f"carries hidden values by name: {', '.join(sorted(leaked)[:5])}")]
