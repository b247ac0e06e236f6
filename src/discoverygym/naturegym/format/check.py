"""`discoverygym package check DIR`: the static and dynamic checks a package must pass.

Each problem is a `Finding(rule, path, message, severity)`; a package passes when none
is an error (gaps in NatureBench's published format are warnings: `published_format_gaps`).
Static: completeness, one primary metric and a parsable SOTA per instance, a SOTA
better than the instance's baseline, cross-file consistency, the information firewall over `problem/`. Dynamic: the evaluator on a
reference submission, on an empty (trivial) one and on malformed outputs."""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...core.bounded import clip
from .evaluator_runner import run_evaluator
from .package import Instance, Package, PackageError, load_package
from .scoring import parse_sota

REQUIRED = ("metadata.json", "problem", "problem/README.md", "evaluation",
            "evaluation/evaluator.py", "evaluation/ground_truth", "environment", "licenses")
README_SECTIONS = ("scientific problem", "task objective", "dataset", "evaluation metric",
                   "output format", "submission")
TABLE_SUFFIXES = {".csv", ".tsv", ".dat"}
TEXT_SUFFIXES = {".md", ".txt", ".csv", ".json", ".tsv", ".py", ".yaml", ".yml", ".dat", ""}
DOI = re.compile(r"\b10\.\d{4,9}/\S+")
MAX_SCAN_BYTES = 256 * 1024 * 1024  # larger files are not compared byte for byte
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def informative_numbers(text: str) -> set[float]:
    """Values in `text` specific enough that finding them elsewhere is no coincidence:
    at least two significant digits, and not a small integer (counts, labels, years)."""
    out = set()
    for token in NUMBER.findall(text):
        mantissa = re.split(r"[eE]", token)[0].lstrip("+-")
        digits = mantissa.replace(".", "").lstrip("0")
        if "." in mantissa:
            digits = digits.rstrip("0") if not mantissa.endswith(".") else digits
        else:
            digits = digits.rstrip("0")
        value = float(token)
        if len(digits) < 2 or (float(value).is_integer() and abs(value) < 10_000):
            continue
        out.add(value)
    return out


def _shared(truth: set[float], text: str) -> set[float]:
    found = informative_numbers(text)
    return {t for t in truth if any(abs(t - f) <= 1e-12 * max(abs(t), 1e-300) for f in found)}


@dataclass(frozen=True)
class Finding:
    rule: str
    path: str
    message: str
    #: "error" fails the package; "warning" (a gap in NatureBench's published format,
    #: which their pipeline accepts) is reported and passes.
    severity: str = "error"

    def __str__(self) -> str:
        tag = self.rule if self.severity == "error" else f"{self.rule}, warning"
        return f"[{tag}] {self.path}: {self.message}"


def errors(findings: list[Finding]) -> list[Finding]:
    """The findings that fail a package (warnings left out)."""
    return [f for f in findings if f.severity == "error"]


def published_format_gaps(pkg: Package, findings: list[Finding]) -> list[Finding]:
    """Findings on what NatureBench's published packages legitimately lack, turned into
    warnings: no licenses/ folder; an instance whose SOTA is null or unreadable (their
    service skips it, and so does the scorer here) while another instance is scored;
    and, when there is no evaluation/reference_submission/, a reference built from
    ground_truth/ that the evaluator does not score (their ground-truth files need not
    be named like the outputs). Everything else stays an error."""
    no_reference = not (pkg.evaluation_dir / "reference_submission").is_dir()
    some_scored = bool(pkg.scored_instances())
    out = []
    for f in findings:
        gap = ""
        if f.rule == "completeness" and f.path == "licenses":
            gap = "no licenses/ folder (NatureBench's guide does not require one)"
        elif f.rule == "sota" and some_scored and ("has no number" in f.message
                                                    or "SOTA is null" in f.message
                                                    or "is 0, so g" in f.message):
            gap = f"{f.message}; the instance is skipped, as NatureBench skips it"
        elif f.rule == "evaluator" and no_reference and "reference submission" in f.message:
            gap = (f"{f.message} (the reference is ground_truth/, which need not use the "
                   "output file names; add evaluation/reference_submission/ to check the "
                   "evaluator on a correct answer)")
        out.append(Finding(f.rule, f.path, gap, "warning") if gap else f)
    return out


def _text_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
            and p.stat().st_size < 5_000_000]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _array_pieces(path: Path) -> set[str]:
    """Digests of a .npy array and of each of its slices along the first axis (as
    float64, so a change of dtype hides nothing); empty if unreadable or tiny."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return set()
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "fiu" or array.size < 16:
        return set()
    array = np.ascontiguousarray(array, dtype=np.float64)
    pieces = {_digest(array.tobytes())}
    if array.ndim > 1 and array[0].size >= 16:
        pieces |= {_digest(np.ascontiguousarray(a).tobytes()) for a in array}
    return pieces


def binary_leak_findings(pkg: Package) -> list[Finding]:
    """Ground-truth files copied into problem/ byte for byte, and ground-truth arrays
    (.npy, whole or any slice along the first axis) inside problem/ arrays."""
    gt = pkg.evaluation_dir / "ground_truth"
    problem = pkg.problem_dir
    if not gt.exists() or not problem.exists():
        return []
    small = [f for f in sorted(gt.rglob("*")) if f.is_file() and f.stat().st_size < MAX_SCAN_BYTES]
    truth_files = {_digest(f.read_bytes()): f for f in small if f.stat().st_size >= 64}
    truth_pieces: set[str] = set()
    for f in small:
        if f.suffix.lower() == ".npy":
            truth_pieces |= _array_pieces(f)
    out = []
    for f in sorted(problem.rglob("*")):
        if not f.is_file() or f.stat().st_size >= MAX_SCAN_BYTES:
            continue
        rel = str(f.relative_to(pkg.root))
        source = truth_files.get(_digest(f.read_bytes()))
        if source is not None:
            out.append(Finding("firewall", rel, "is a copy of the ground-truth file "
                               f"{source.relative_to(pkg.evaluation_dir)}"))
        elif f.suffix.lower() == ".npy" and truth_pieces & _array_pieces(f):
            out.append(Finding("firewall", rel, "contains ground-truth arrays"))
    return out


def _baseline_findings(inst: Instance) -> list[Finding]:
    """A SOTA no better than the instance's own baseline (the same figure, or a worse
    one) makes g = 0 for the baseline say nothing: the task is scored against itself."""
    if not isinstance(inst.baseline, dict) or inst.sota is None:
        return []
    baseline = parse_sota(inst.baseline.get("value"), inst.direction)
    if baseline is None:
        return []
    better = inst.sota > baseline if inst.direction == "higher_is_better" else \
        inst.sota < baseline
    if better:
        return []
    how = "equals" if math.isclose(baseline, inst.sota, rel_tol=1e-9, abs_tol=0.0) else \
        "is better than"
    return [Finding("sota", "metadata.json",
                    f"instance {inst.name}: the baseline ({baseline:g}) {how} the SOTA "
                    f"({inst.sota:g}); the SOTA must come from a stronger method")]


def static_findings(pkg: Package) -> list[Finding]:
    out: list[Finding] = []
    root = pkg.root
    for rel in REQUIRED:
        if not (root / rel).exists():
            out.append(Finding("completeness", rel, "missing"))
    readme = root / "problem" / "README.md"
    if readme.exists():
        text = readme.read_text(errors="replace").lower()
        for section in README_SECTIONS:
            if section not in text:
                out.append(Finding("completeness", "problem/README.md",
                                   f"no section about '{section}'"))
    for inst in pkg.instances:
        if inst.sota is None:
            # The entries' values (not the whole entry, cut mid-string): what lacks a number.
            values = [e.get("value") if isinstance(e, dict) else e for e in inst.sota_text]
            what = ("is null" if not inst.sota_text else
                    f"value {clip(', '.join(map(repr, values)), 160)} has no number")
            out.append(Finding("sota", "metadata.json", f"instance {inst.name}: SOTA {what}"))
        elif inst.sota == 0:
            out.append(Finding("sota", "metadata.json",
                               f"instance {inst.name}: SOTA is 0, so g is undefined"))
        else:
            out += _baseline_findings(inst)
    gt = root / "evaluation" / "ground_truth"
    data = root / "problem" / "data"
    for inst in pkg.instances:
        if gt.exists() and not (gt / inst.name).exists():
            out.append(Finding("consistency", f"evaluation/ground_truth/{inst.name}",
                               "no ground truth for this instance"))
        if data.exists() and not (data / inst.name).exists() and not (
                root / "problem" / "data_archives").exists():
            out.append(Finding("consistency", f"problem/data/{inst.name}",
                               "no data for this instance"))
    out += firewall_findings(pkg)
    out += binary_leak_findings(pkg)
    if pkg.has_split and not pkg.scored_instances("evaluation"):
        out.append(Finding("split", "metadata.json",
                           "no evaluation instance has a usable SOTA: nothing would be scored"))
    return out


def split_findings(pkg: Package, *, timeout_s: float = 120.0) -> list[Finding]:
    """With a split, `evaluate` runs the evaluator on the development folders alone:
    it must score them and must not score an evaluation instance from them (its
    outputs live in OUTPUT_DIR/<instance>/). Without a split, one finding says that
    feedback is given on the scored instances."""
    if not pkg.has_split:
        return [Finding("split", "metadata.json",
                        "no development/evaluation split: `evaluate` gives feedback on the "
                        "instances that are scored, so repeated evaluations can reveal the "
                        "truth (mark each performance entry 'split': 'development' or "
                        "'evaluation')")]
    out: list[Finding] = []
    reference = pkg.evaluation_dir / "reference_submission"
    if not reference.exists():
        reference = pkg.evaluation_dir / "ground_truth"
    development = pkg.split_names("development")
    with tempfile.TemporaryDirectory() as view:
        for name in development:
            if (reference / name).is_dir():
                shutil.copytree(reference / name, Path(view) / name)
        ev = run_evaluator(pkg, Path(view), timeout_s=timeout_s)
    if not ev.ok:
        return [Finding("split", "evaluation/evaluator.py",
                        f"fails on the development outputs alone: {ev.error}")]
    for inst in pkg.scored_instances("development"):
        if ev.g.get(inst.name, -1.0) <= -1.0:
            out.append(Finding("split", "evaluation/evaluator.py",
                               f"does not score development instance {inst.name} from "
                               f"OUTPUT_DIR/{inst.name}/ alone"))
    for name, value in ev.raw.items():
        inst = next((i for i in pkg.instances if i.name == name), None)
        if inst is not None and inst.split == "evaluation" and isinstance(value, dict) \
                and isinstance(value.get(inst.metric), int | float):
            out.append(Finding("split", "evaluation/evaluator.py",
                               f"measures evaluation instance {name} without its folder "
                               f"OUTPUT_DIR/{name}/"))
    return out


def firewall_findings(pkg: Package) -> list[Finding]:
    """Nothing in problem/ may reveal the paper, the method, the evaluator or the truth."""
    out: list[Finding] = []
    meta = pkg.metadata
    problem = pkg.problem_dir
    if not problem.exists():
        return out
    forbidden: list[tuple[str, str]] = []
    for key in ("paper_title", "title_of_paper", "source_paper_title"):
        if isinstance(meta.get(key), str) and len(meta[key]) > 8:
            forbidden.append((meta[key], "paper title"))
    for inst in pkg.instances:
        for entry in inst.sota_text:
            method = str(entry.get("method") or "").strip()
            if len(method) >= 4 and method.lower() not in ("literature", "baseline"):
                forbidden.append((method, "SOTA method name"))
    for term in meta.get("firewall", {}).get("forbidden_terms", []):
        forbidden.append((term, "declared forbidden term"))
    # Ground-truth files usually share their names with the expected outputs, so only
    # the evaluator's other files (helpers, reference solutions) count as hidden names.
    gt_dir = pkg.evaluation_dir / "ground_truth"
    hidden_names = {p.name for p in pkg.evaluation_dir.rglob("*") if p.is_file()
                    and gt_dir not in p.parents and p.name != "evaluator.py"
                    and len(p.name) > 6}
    # Ground truth as values (JSON, text) and as table rows (CSV/TSV): a table's key
    # columns (times, ids) legitimately reappear in problem/, a whole row must not.
    truth_numbers: set[float] = set()
    truth_rows: list[set[float]] = []
    gt = pkg.evaluation_dir / "ground_truth"
    if gt.exists():
        for f in _text_files(gt):
            text = f.read_text(errors="replace")
            if f.suffix.lower() in TABLE_SUFFIXES:
                truth_rows += [row for row in map(informative_numbers, text.splitlines())
                               if len(row) >= 2]
            else:
                truth_numbers |= informative_numbers(text)
    for f in _text_files(problem):
        rel = str(f.relative_to(pkg.root))
        text = f.read_text(errors="replace")
        low = text.lower()
        for term, why in forbidden:
            if term.lower() in low:
                out.append(Finding("firewall", rel, f"mentions the {why} {term!r}"))
        if DOI.search(text):
            out.append(Finding("firewall", rel, f"contains a DOI ({DOI.search(text).group(0)})"))
        if re.search(r"\bevaluation/|evaluator\.py|ground_truth", text):
            out.append(Finding("firewall", rel, "mentions the hidden evaluation/ folder"))
        for name in hidden_names:
            if name in text:
                out.append(Finding("firewall", rel, f"names the hidden file {name!r}"))
        is_table = f.suffix.lower() in TABLE_SUFFIXES
        if truth_numbers:
            leaked = _shared(truth_numbers, text)
            # Data tables hold many numbers; one coincidence there is not a leak.
            if leaked and (not is_table or len(leaked) >= 3):
                out.append(Finding("firewall", rel,
                                   f"contains ground-truth values {sorted(leaked)[:3]}"))
        if truth_rows:
            lines = [informative_numbers(line) for line in text.splitlines()]
            copied = sum(any(row <= line for line in lines) for row in truth_rows)
            # In prose one copied row is a leak; a data table may share a few by chance.
            if copied >= (min(3, len(truth_rows)) if is_table else 1):
                out.append(Finding("firewall", rel,
                                   f"contains {copied} rows of the ground-truth tables"))
    return out


def dynamic_findings(pkg: Package, *, timeout_s: float = 120.0) -> list[Finding]:
    """Run the evaluator on a reference, an empty and a malformed submission."""
    out: list[Finding] = []
    reference = pkg.evaluation_dir / "reference_submission"
    if not reference.exists():
        reference = pkg.evaluation_dir / "ground_truth"
    ev = run_evaluator(pkg, reference, timeout_s=timeout_s)
    if not ev.ok:
        out.append(Finding("evaluator", "evaluation/evaluator.py",
                           f"fails on the reference submission: {ev.error}"))
    else:
        for inst in pkg.scored_instances():
            if ev.g.get(inst.name, -1.0) <= -1.0:
                out.append(Finding("evaluator", "evaluation/evaluator.py",
                                   f"reference submission scores as failed on {inst.name}"))
    with tempfile.TemporaryDirectory() as empty:
        ev = run_evaluator(pkg, Path(empty), timeout_s=timeout_s)
        if not ev.ok:
            out.append(Finding("evaluator", "evaluation/evaluator.py",
                               f"crashes on an empty submission: {ev.error}"))
        elif any(g > -1.0 for g in ev.g.values()):
            out.append(Finding("evaluator", "evaluation/evaluator.py",
                               "an empty submission scores above failure"))
    with tempfile.TemporaryDirectory() as bad:
        bad_root = Path(bad)
        for f in reference.rglob("*"):
            if f.is_file():
                target = bad_root / f.relative_to(reference)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(b"\x00not,valid\nNaN,inf,,\x01{[")
        ev = run_evaluator(pkg, bad_root, timeout_s=timeout_s)
        if not ev.ok:
            out.append(Finding("evaluator", "evaluation/evaluator.py",
                               f"crashes on malformed outputs: {ev.error}"))
        elif any(g > -1.0 for g in ev.g.values()):
            out.append(Finding("evaluator", "evaluation/evaluator.py",
                               "malformed outputs score above failure"))
    return out


def sota_reading_warnings(pkg: Package) -> list[Finding]:
    """A SOTA string NatureBench's reader (the default here) cannot read, but which
    holds a number ("R2 = 0.91", ".85", a Unicode minus): the entry is ignored, as
    theirs ignores it; say so, so the author can write the number plainly."""
    out = []
    for inst in pkg.instances:
        for entry in inst.sota_text:
            value = entry.get("value")
            if value is None or parse_sota(value, inst.direction) is not None:
                continue
            lenient = parse_sota(value, inst.direction, "discoverygym")
            if lenient is not None:
                out.append(Finding("sota", "metadata.json",
                                   f"instance {inst.name}: SOTA {str(value)[:80]!r} is not "
                                   "read by NatureBench's rules (ignored, as there); a "
                                   f"lenient reading would give {lenient:g}", "warning"))
    return out


def check_package(root: Path, *, dynamic: bool = True,
                  require_split: bool = False) -> list[Finding]:
    """All findings for one package directory (it passes when none is an error:
    see `errors`). A package without a
    development/evaluation split passes unless `require_split` (published packages
    have none; ours all do)."""
    try:
        pkg = load_package(root)
    except PackageError as exc:
        return [Finding("metadata", "metadata.json", str(exc))]
    findings = static_findings(pkg)
    if dynamic and (pkg.evaluator.exists()):
        findings += dynamic_findings(pkg)
        if pkg.has_split or require_split:
            findings += split_findings(pkg)
    elif require_split and not pkg.has_split:
        findings += split_findings(pkg)
    return published_format_gaps(pkg, findings) + sota_reading_warnings(pkg)


def copy_package(src: Path, dst: Path) -> Path:
    """A writable copy of a package (for tests that break one on purpose)."""
    shutil.copytree(src, dst)
    return dst
