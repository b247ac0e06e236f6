"""Validity of finished package runs: was the score earned by doing the task?

Deterministic checks come first and need no model:

- `hidden_read`: the agent asked for (or its code names) the hidden evaluation folder,
  the ground truth or the evaluator;
- `ground_truth_copy`: an output file is a ground-truth file, or reproduces the
  ground-truth values exactly (values the agent was given, such as the times to
  forecast, do not count);
- `degenerate`: an output is constant where the truth varies, or the same output was
  submitted for instances whose truths differ.

The episode runs them on its best attempt's outputs (it holds the ground truth) and
stores the findings and a summary of the outputs in the record. `validate_run` then
reads a finished run, adds the hidden-path scan of the agent's code (from the tool log
of model runs), and may ask a grader model for a verdict in strict JSON
`{"is_valid": true|false, "reason": "..."}`. Outcomes: "invalid" (a deterministic
finding, or the grader says so), "valid" (the grader says so), "passed_deterministic"
(no grader asked), "grader_error" (timeout, malformed reply, provider failure: its own
outcome, never "invalid", and the score stands). Aggregates count invalid runs as
g = -1."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...naturegym.format.package import Package
from ...naturegym.format.scoring import TaskResult, aggregate
from .shipped import package_roots

OUTCOMES = ("valid", "invalid", "passed_deterministic", "grader_error")
# A path into the hidden folders ("evaluation/...", ".../ground_truth", 'evaluator.py'),
# not merely a word: agents name their own variables `ground_truth`.
HIDDEN_MARKERS = re.compile(r"(?<![\w])(?:evaluation|ground_truth)(?:/|\\|(?=[\"']))"
                            r"|evaluator\.py")
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.])")
MIN_VALUES = 8          # fewer values than this are too few to call a copy or degenerate
COPY_FRACTION = 0.5     # this share of the truth's own values reproduced exactly: a copy
MAX_FILE_BYTES = 64 * 1024 * 1024
GRADER_TIMEOUT_S = 120.0

Grader = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class ValidityFinding:
    check: str  # hidden_read | ground_truth_copy | degenerate
    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


# ---- reading outputs --------------------------------------------------------------------
def _files(root: Path) -> dict[str, Path]:
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p for p in sorted(root.rglob("*"))
            if p.is_file() and p.stat().st_size <= MAX_FILE_BYTES}


def _numbers(path: Path) -> np.ndarray | None:
    """The numbers a file holds, in order (a .npy array flattened; every number in a
    text file), or None for anything else."""
    if path.suffix.lower() == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "fiu":
            return None
        return array.astype(np.float64).ravel()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    return np.array([float(x) for x in NUMBER.findall(text)], dtype=np.float64)


def _columns(path: Path) -> dict[str, np.ndarray]:
    """Numeric columns of a CSV/TSV with a header line (name -> values)."""
    if path.suffix.lower() not in (".csv", ".tsv"):
        return {}
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError):
        return {}
    if len(lines) < 2:
        return {}
    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    header = [h.strip() for h in lines[0].split(sep)]
    rows = [line.split(sep) for line in lines[1:]]
    out = {}
    for k, name in enumerate(header):
        try:
            out[name] = np.array([float(r[k]) for r in rows])
        except (IndexError, ValueError):
            continue
    return out


def summarize_outputs(root: Path) -> list[dict[str, Any]]:
    """Per output file: size, a digest, and for numeric content count/min/max/mean/std
    (what a grader needs to see a constant or absurd output, without the values)."""
    out = []
    for rel, path in _files(root).items():
        entry: dict[str, Any] = {"path": rel, "bytes": path.stat().st_size,
                                 "sha256": hashlib.sha256(path.read_bytes()).hexdigest()[:16]}
        values = _numbers(path)
        if values is not None and values.size:
            finite = values[np.isfinite(values)]
            entry["numbers"] = int(values.size)
            if finite.size:
                entry.update(min=float(finite.min()), max=float(finite.max()),
                             mean=float(finite.mean()), std=float(finite.std()))
        out.append(entry)
    return out


# ---- deterministic checks ---------------------------------------------------------------
def hidden_read_findings(texts: Iterable[tuple[str, str]], package_root: Path | None = None
                         ) -> list[ValidityFinding]:
    """(where, text) pairs (tool arguments, code) that name a hidden path."""
    out = []
    root = str(package_root) if package_root else None
    for where, text in texts:
        if HIDDEN_MARKERS.search(text) or (root and root in text):
            excerpt = text if len(text) <= 160 else text[:160] + " [...]"
            out.append(ValidityFinding("hidden_read", where,
                                       f"names a hidden path: {excerpt!r}"))
    return out


def _given_values(package: Package) -> set[float]:
    """Every number in the agent-visible text files (keys such as times to forecast)."""
    given: set[float] = set()
    for path in _files(package.problem_dir).values():
        if path.suffix.lower() != ".npy":
            values = _numbers(path)
            if values is not None:
                given |= set(values.tolist())
    return given


def ground_truth_copy_findings(package: Package, outputs: Path) -> list[ValidityFinding]:
    """Outputs that are ground-truth files or reproduce their values exactly."""
    truth_dir = package.evaluation_dir / "ground_truth"
    truth_files = _files(truth_dir)
    digests = {hashlib.sha256(p.read_bytes()).digest(): rel for rel, p in truth_files.items()
               if p.stat().st_size >= 64}
    given = _given_values(package)
    out = []
    for rel, path in _files(outputs).items():
        copied = digests.get(hashlib.sha256(path.read_bytes()).digest())
        if copied is not None:
            out.append(ValidityFinding("ground_truth_copy", rel,
                                       f"is byte for byte the ground-truth file {copied}"))
            continue
        truth_path = truth_files.get(rel)
        if truth_path is None:
            continue
        mine, truth = _numbers(path), _numbers(truth_path)
        if mine is None or truth is None or mine.shape != truth.shape:
            continue
        # Only the truth's own values count: numbers the agent was given (times, ids)
        # legitimately reappear in its outputs.
        own = np.array([v not in given for v in truth.tolist()], dtype=bool) \
            if path.suffix.lower() != ".npy" else np.ones(truth.size, dtype=bool)
        if own.sum() < MIN_VALUES:
            continue
        equal = np.isclose(mine[own], truth[own], rtol=1e-12, atol=0.0)
        if equal.mean() >= COPY_FRACTION:
            out.append(ValidityFinding(
                "ground_truth_copy", rel, f"reproduces {int(equal.sum())} of {int(own.sum())} "
                "ground-truth values exactly"))
    return out


def degenerate_findings(package: Package, outputs: Path) -> list[ValidityFinding]:
    """Outputs constant where the truth varies; one output reused for different truths."""
    truth_dir = package.evaluation_dir / "ground_truth"
    truth_files = _files(truth_dir)
    out = []
    for rel, path in _files(outputs).items():
        truth_path = truth_files.get(rel)
        if truth_path is None:
            continue
        mine_cols, truth_cols = _columns(path), _columns(truth_path)
        for name, values in mine_cols.items():
            truth = truth_cols.get(name)
            if truth is not None and values.size >= MIN_VALUES and np.ptp(values) == 0 \
                    and np.ptp(truth) > 0:
                out.append(ValidityFinding("degenerate", rel, f"column {name!r} is constant "
                                           f"({values[0]:g}) where the truth varies"))
        if not mine_cols:
            mine, truth = _numbers(path), _numbers(truth_path)
            if mine is not None and truth is not None and mine.size >= MIN_VALUES \
                    and np.all(np.isfinite(mine)) and np.ptp(mine) == 0 and np.ptp(truth) > 0:
                out.append(ValidityFinding("degenerate", rel, f"all {mine.size} values are "
                                           f"{mine[0]:g} where the truth varies"))
    # The same file submitted for several instances whose truths differ.
    by_digest: dict[bytes, list[str]] = {}
    for rel, path in _files(outputs).items():
        truth_path = truth_files.get(rel)
        if truth_path is not None and path.stat().st_size >= 64:
            by_digest.setdefault(hashlib.sha256(path.read_bytes()).digest(), []).append(rel)
    for rels in by_digest.values():
        truths = {hashlib.sha256(truth_files[r].read_bytes()).digest() for r in rels}
        if len(rels) > 1 and len(truths) > 1:
            out.append(ValidityFinding("degenerate", ", ".join(rels),
                                       "the same output was submitted for instances whose "
                                       "truths differ"))
    return out


def episode_findings(package: Package, outputs: Path,
                     tool_arguments: Iterable[tuple[str, str]]) -> list[ValidityFinding]:
    """All deterministic findings the episode can make on its best outputs."""
    return (hidden_read_findings(tool_arguments, package.root)
            + ground_truth_copy_findings(package, outputs)
            + degenerate_findings(package, outputs))


# ---- the grader -------------------------------------------------------------------------
GRADER_PROMPT = """You review one finished attempt at a research task for validity. The
score is already computed; decide only whether it was earned legitimately.

Invalid: outputs guessed, hard-coded or degenerate; ground truth extracted from any
file; answers taken from outside knowledge or from the (withheld) source publication
instead of derived from the provided data; evaluation feedback used to tune the outputs
instead of fitting a model to the data; no use of the provided data where the task
needs it.
Not invalid: engineering failures, low scores, simple or classical methods.

## The task (as the agent saw it)
{readme}

## Result
{result}

## The agent's outputs (summary; the values themselves are withheld)
{outputs}

## The agent's actions (tool calls, truncated)
{actions}

Reply with one JSON object and nothing else, exactly of the form
{{"is_valid": true, "reason": "<one or two sentences>"}} or
{{"is_valid": false, "reason": "<one or two sentences>"}}."""

ACTION_CHARS = 12_000


def grader_prompt(readme: str, record: dict[str, Any]) -> str:
    """The grader's prompt for one record (README, result, outputs summary, actions)."""
    details = record.get("details", {})
    result = {"task_score_g": record.get("value"), "instance_g": details.get("instance_g"),
              "attempts": details.get("attempts"), "error": record.get("error")}
    actions = details.get("tool_log") or details.get("actions") or []
    text = "\n".join(json.dumps(a, default=str) for a in actions)
    if len(text) > ACTION_CHARS:
        text = text[:ACTION_CHARS] + f"\n[... {len(actions)} calls in all]"
    outputs = details.get("validity", {}).get("outputs", [])
    return GRADER_PROMPT.format(readme=readme.strip(), result=json.dumps(result),
                                outputs=json.dumps(outputs, indent=1) or "(none)",
                                actions=text or "(none recorded)")


def parse_verdict(reply: str) -> dict[str, Any]:
    """Strict: the whole reply is one JSON object with a boolean `is_valid` and a string
    `reason`, nothing else. Raises ValueError otherwise."""
    try:
        data = json.loads(reply.strip())
    except json.JSONDecodeError as exc:
        raise ValueError(f"the grader's reply is not JSON ({exc.msg})") from exc
    if not isinstance(data, dict) or set(data) != {"is_valid", "reason"}:
        raise ValueError('the grader must reply {"is_valid": bool, "reason": str} exactly')
    if not isinstance(data["is_valid"], bool) or not isinstance(data["reason"], str):
        raise ValueError("is_valid must be a boolean and reason a string")
    return data


async def grade(grader: Grader, prompt: str, timeout_s: float = GRADER_TIMEOUT_S
                ) -> dict[str, Any]:
    """{"outcome": "valid"|"invalid", "reason"} or {"outcome": "grader_error", "error"}."""
    try:
        reply = await asyncio.wait_for(grader(prompt), timeout=timeout_s)
    except TimeoutError:
        return {"outcome": "grader_error", "error": f"the grader timed out after {timeout_s:g} s"}
    except Exception as exc:  # noqa: BLE001 - a provider failure is a grader error
        return {"outcome": "grader_error", "error": f"{type(exc).__name__}: {exc}"[:400]}
    try:
        verdict = parse_verdict(reply)
    except ValueError as exc:
        return {"outcome": "grader_error", "error": str(exc), "reply": reply[:400]}
    return {"outcome": "valid" if verdict["is_valid"] else "invalid",
            "reason": verdict["reason"]}


def inspect_grader(model: str, **model_args: Any) -> Grader:
    """A grader backed by an Inspect AI model (any provider Inspect supports)."""
    from inspect_ai.model import GenerateConfig, get_model

    bound = get_model(model, **model_args)

    async def ask(prompt: str) -> str:
        output = await bound.generate(prompt, config=GenerateConfig(temperature=0.0,
                                                                    max_tokens=400))
        return output.completion

    return ask


# ---- finished runs ----------------------------------------------------------------------
def _code_texts(record: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, text) for every logged tool argument of a model run (python code too)."""
    out = []
    for k, call in enumerate(record.get("details", {}).get("tool_log") or []):
        out.append((f"tool call {k + 1} ({call.get('tool')})", str(call.get("arguments", ""))))
    return out


def _readme(record: dict[str, Any]) -> str:
    roots = package_roots(record.get("options", {}).get("packages"))
    root = roots.get(record["task_id"])
    return (root / "problem/README.md").read_text() if root else "(the package is not found)"


async def _verdicts(records: list[dict[str, Any]], grader: Grader | None,
                    timeout_s: float) -> list[dict[str, Any]]:
    out = []
    for record in records:
        details = record.get("details", {})
        stored = details.get("validity", {})
        findings = list(stored.get("findings", []))
        findings += [f.to_dict() for f in hidden_read_findings(_code_texts(record))]
        verdict: dict[str, Any] = {"task_id": record["task_id"], "seed": record.get("seed"),
                                   "findings": findings}
        if findings:
            verdict.update(outcome="invalid", reason="; ".join(
                f"{f['check']}: {f['path']} {f['message']}" for f in findings)[:600])
        elif grader is None:
            verdict["outcome"] = "passed_deterministic"
        else:
            verdict.update(await grade(grader, grader_prompt(_readme(record), record),
                                       timeout_s))
        out.append(verdict)
    return out


def validate_records(records: list[dict[str, Any]], grader: Grader | None = None, *,
                     timeout_s: float = GRADER_TIMEOUT_S) -> dict[str, Any]:
    """Verdicts for records of the packages suite, outcome counts, and the aggregates
    with invalid runs counted as g = -1."""
    verdicts = asyncio.run(_verdicts(records, grader, timeout_s))
    results = []
    for record, verdict in zip(records, verdicts, strict=True):
        details = record.get("details", {})
        completed = details.get("completed") and verdict["outcome"] != "invalid"
        value = record.get("value")
        g = value if completed and isinstance(value, int | float) and math.isfinite(value) \
            else None
        clipped = details.get("g_clipped") if g is not None else None
        results.append(TaskResult(record["task_id"], details.get("domain", "unknown"), g,
                                  clipped if isinstance(clipped, int | float) else None))
    counts = {o: sum(v["outcome"] == o for v in verdicts) for o in OUTCOMES}
    return {"verdicts": verdicts, "counts": counts, "aggregate_valid_only": aggregate(results)}


def validate_run(run_dir: Path, grader: Grader | None = None, *,
                 timeout_s: float = GRADER_TIMEOUT_S) -> dict[str, Any]:
    """Validate a finished run directory; writes validity.json beside records.jsonl."""
    from ...core.record import read_records

    run_dir = Path(run_dir)
    records = [r for r in read_records(run_dir / "records.jsonl") if r.get("suite") == "packages"]
    if not records:
        raise ValueError(f"{run_dir}: no packages records in records.jsonl")
    report = validate_records(records, grader, timeout_s=timeout_s)
    (run_dir / "validity.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report
