"""A NatureBench leaderboard submission written from a run folder of the packages suite.

`write_submission(run_dir, out)` writes, from the run's records alone:

    out/submission.yaml           their submission and evaluation fields
    out/results.csv               case_id, final_status, best_score, judge_verdict, judge_reason
    out/case_metadata.csv         case_id, domain of the run's packages (their scripts take it
                                  with --case-metadata; their official list holds their 90)
    out/raw-results/README.md     how these files differ from their pipeline's
    out/raw-results/<case_id>/    result.json, submissions.jsonl (the attempt history),
                                  judge_verdict.json (scored cases), trajectory.json

and returns the leaderboard figures by their published rules (`naturebench_figures`:
Score Rate, Completion Rate, Match- and Surpass-SOTA, mean and median g over all tasks
with invalid and unscored ones at -1, median g over valid tasks, the distribution, the
same per domain). Their `validate_submission.py` accepts the folder and their
`compute_scores.py` gives the same figures (tests/suites/packages/test_packages_naturebench_submission.py
runs both). Facts (column names, rules, formulas) come from their SUBMISSION_SPEC.md and
compute_scores.py; no code is copied."""

from __future__ import annotations

import csv
import json
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ...naturegym.format.package import NATUREBENCH_SOLVE_S

RESULT_COLUMNS = ("case_id", "final_status", "best_score", "judge_verdict", "judge_reason")
#: A case id becomes a folder name: plain characters only, never "." or "..".
SAFE_CASE_ID = re.compile(r"^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$")
MAX_REASON_CHARS = 500
MAX_ATTEMPTS_WRITTEN = 500
METRIC_VERSION = "naturebench-public-v1"


class SubmissionError(ValueError):
    """The run folder cannot give a submission; the message says why (one line)."""


@dataclass(frozen=True)
class CaseResult:
    """One results.csv row and what its raw-results folder holds."""

    case_id: str
    domain: str
    final_status: str
    best_score: float | None
    judge_verdict: str  # valid, invalid, not_applicable
    judge_reason: str
    attempts: list[dict[str, Any]]  # submissions.jsonl lines
    record: dict[str, Any]


def _one_line(text: Any, limit: int = MAX_REASON_CHARS) -> str:
    return " ".join(str(text).split())[:limit]


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _attempt_lines(record: dict[str, Any]) -> tuple[list[dict[str, Any]], float | None]:
    """submissions.jsonl lines in their format, and the best score they support.

    Without a split each evaluation the agent asked for (and, under the discoverygym
    protocol, the one at `submit`) is an attempt: type success with its
    aggregate_improvement, or failure with null. With a split, development feedback is
    written as type "development" (its g is not a score, so it goes under
    development_aggregate_improvement) and the one held-out evaluation as the scored
    attempt."""
    details = record.get("details") if isinstance(record.get("details"), dict) else {}
    history = details.get("attempt_history")
    history = history if isinstance(history, list) else []
    split = isinstance(details.get("split"), dict)
    lines: list[dict[str, Any]] = []
    for h in history[:MAX_ATTEMPTS_WRITTEN]:
        if not isinstance(h, dict):
            continue
        g = _finite(h.get("aggregate_g")) if h.get("ok") is True else None
        per_instance = h.get("instance_g") if isinstance(h.get("instance_g"), dict) else None
        line: dict[str, Any] = {"type": "success" if g is not None else "failure",
                                "attempt": len(lines) + 1}
        if split:
            line.update(type="development", development_aggregate_improvement=g,
                        development_per_instance_improvement=per_instance)
        else:
            line.update(per_instance_improvement=per_instance, aggregate_improvement=g)
        if h.get("error"):
            line["error"] = _one_line(h["error"])
        lines.append(line)
    completed = details.get("completed") is True
    value = _finite(record.get("value"))
    if split:
        if completed and value is not None:
            lines.append({"type": "success", "attempt": len(lines) + 1,
                          "held_out_evaluation": True,
                          "per_instance_improvement": details.get("instance_g"),
                          "aggregate_improvement": value})
            return lines, value
        return lines, None
    scored = [line["aggregate_improvement"] for line in lines
              if line.get("aggregate_improvement") is not None]
    return lines, (max(scored) if scored else None)


def _verdict(record: dict[str, Any], best: float | None) -> tuple[str, str]:
    """(judge_verdict, judge_reason) from discoverygym's deterministic validity checks
    (the record's details.validity): no finding is valid, any finding invalid."""
    if best is None:
        return "not_applicable", "not_applicable"
    validity = (record.get("details") or {}).get("validity")
    findings = validity.get("findings") if isinstance(validity, dict) else None
    if not isinstance(findings, list):
        return "valid", "discoverygym validity checks: not recorded; counted valid"
    if not findings:
        return "valid", "discoverygym deterministic validity checks: no finding"
    said = "; ".join(_one_line(f"{f.get('check', '')}: {f.get('message', '')}", 150)
                     if isinstance(f, dict) else _one_line(f, 150) for f in findings[:3])
    return "invalid", _one_line(f"discoverygym validity findings: {said}")


def case_result(record: dict[str, Any]) -> CaseResult:
    case_id = record.get("task_id")
    if not isinstance(case_id, str) or not SAFE_CASE_ID.match(case_id):
        raise SubmissionError(f"record task_id {_one_line(repr(case_id), 80)} is not a plain "
                              "case id (letters, digits, '.', '_', '-')")
    details = record.get("details") if isinstance(record.get("details"), dict) else {}
    attempts, best = _attempt_lines(record)
    verdict, reason = _verdict(record, best)
    status = "success" if record.get("error") is None and best is not None else "error"
    return CaseResult(case_id=case_id, domain=_one_line(details.get("domain", "unknown"), 100)
                      or "unknown", final_status=status, best_score=best,
                      judge_verdict=verdict, judge_reason=reason, attempts=attempts,
                      record=record)


def _metrics(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """Their leaderboard metrics for one set of cases (percentages, rounded to 6)."""
    total = len(cases)
    scored = [c for c in cases if c.best_score is not None]
    valid = [c.best_score for c in scored if c.judge_verdict == "valid"]
    everything = [c.best_score if c.best_score is not None and c.judge_verdict == "valid"
                  else -1.0 for c in cases]

    def pct(n: int) -> float:
        return round(n / total * 100.0, 6) if total else 0.0

    def rounded(values: list[float], how: Any) -> float | None:
        return round(how(values), 6) if values else None

    return {
        "task_count": total, "scored_count": len(scored), "valid_count": len(valid),
        "invalid_count": sum(c.judge_verdict == "invalid" for c in scored),
        "no_score_count": total - len(scored),
        "score_rate": pct(len(scored)), "completion_rate": pct(len(valid)),
        "match_sota": pct(sum(g >= 0 for g in valid)),
        "surpass_sota": pct(sum(g > 0.1 for g in valid)),
        "mean_g_all": rounded(everything, statistics.fmean),
        "median_g_all": rounded(everything, statistics.median),
        "median_g_valid": rounded(valid, statistics.median),
        "distribution": {
            "no_score": total - len(scored),
            "invalid": sum(c.judge_verdict == "invalid" for c in scored),
            "g_lt_minus_0_5": sum(g < -0.5 for g in valid),
            "g_minus_0_5_to_0": sum(-0.5 <= g < 0 for g in valid),
            "g_0_to_0_1": sum(0 <= g <= 0.1 for g in valid),
            "g_0_1_to_0_5": sum(0.1 < g <= 0.5 for g in valid),
            "g_gt_0_5": sum(g > 0.5 for g in valid)},
    }


def naturebench_figures(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """The figures their compute_scores.py reports for these rows: overall and per
    domain, cases in case-id order."""
    ordered = sorted(cases, key=lambda c: c.case_id)
    domains = sorted({c.domain for c in ordered})
    return {"metric_version": METRIC_VERSION, "overall": _metrics(ordered),
            "domains": {d: _metrics([c for c in ordered if c.domain == d]) for d in domains}}


def _submission_yaml(records: Sequence[dict[str, Any]], fields: dict[str, str]) -> str:
    import yaml

    limits = {_finite((r.get("options") or {}).get("time_limit_s")) for r in records}
    timeout = int(limits.pop()) if len(limits) == 1 and None not in limits else \
        int(NATUREBENCH_SOLVE_S)
    protocols = sorted({str(r.get("protocol") or "discoverygym") for r in records})
    first = records[0]
    payload = {
        "submission": {
            "model": fields.get("model") or _one_line(first.get("model") or "unknown", 200),
            "agent": fields.get("agent") or _one_line(first.get("agent") or "unknown", 200),
            "organization": fields.get("organization") or "Independent",
            "url": fields.get("url") or "https://example.invalid/fill-in-before-submitting",
            "submission_date": fields.get("submission_date") or date.today().isoformat(),
            "contact": fields.get("contact") or "fill-in-before-submitting"},
        "evaluation": {
            "timeout_seconds": timeout, "web_search": False,
            "compute": fields.get("compute") or "discoverygym run; see raw-results/README.md",
            "judge_model": "", "human_intervention": "none",
            "deviations_from_reference": (
                "run and scored with discoverygym (scoring protocol "
                f"{', '.join(protocols)}; SOTA strings read by NatureBench's rules); the "
                "cases are the run's packages, listed in case_metadata.csv; validity from "
                "discoverygym's deterministic checks, no model judge")}}
    return yaml.safe_dump(payload, sort_keys=False, allow_unicode=True)


RAW_README = """# Raw results written by discoverygym

Written by `discoverygym package summary RUN_DIR --naturebench OUT` from the run's
records.jsonl. Differences from NatureBench's own pipeline:

- `result.json` holds `status` (success: a score and no error; else error) and the
  discoverygym record's headline fields; `trajectory.json` is the record's list of tool
  calls (`details.actions`, at most 300) with its usage, not the model's messages.
- `submissions.jsonl` is the attempt history the record keeps (at most 500 attempts;
  raw evaluator output is not kept). With a development/evaluation split, development
  feedback is written as type `development` (its g under
  `development_aggregate_improvement`, not a score) and the one held-out evaluation as
  the scored attempt.
- `judge_verdict.json` comes from discoverygym's deterministic validity checks (outputs
  that copy the data, tool calls that reach for the evaluation, unsafe outputs), not from
  a model judge: no finding is valid, any finding invalid.
- Scoring protocol {protocols}: under "discoverygym" the outputs left at the end were
  evaluated once more (an attempt here); under "naturebench" only the evaluations the
  agent asked for count.
"""


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False,
                               default=str) + "\n", encoding="utf-8")


def _clean(value: Any) -> Any:
    """JSON without NaN or infinity (their readers reject them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def write_submission(records: Iterable[dict[str, Any]], out: Path,
                     fields: dict[str, str] | None = None) -> dict[str, Any]:
    """Write the submission folder `out` (which must not exist yet) from packages
    records; return their leaderboard figures for it."""
    records = [r for r in records if isinstance(r, dict) and r.get("suite") == "packages"]
    if not records:
        raise SubmissionError("no packages records")
    cases = [case_result(r) for r in records]
    seen: set[str] = set()
    for c in cases:
        if c.case_id in seen:
            raise SubmissionError(f"case {c.case_id} appears twice in the run (one row each)")
        seen.add(c.case_id)
    out = Path(out)
    if out.exists():
        raise SubmissionError(f"{out} exists; give a new folder")
    raw = out / "raw-results"
    raw.mkdir(parents=True)
    (out / "submission.yaml").write_text(_submission_yaml(records, fields or {}),
                                         encoding="utf-8")
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(RESULT_COLUMNS)
        for c in sorted(cases, key=lambda c: c.case_id):
            writer.writerow([c.case_id, c.final_status,
                             "" if c.best_score is None else repr(c.best_score),
                             c.judge_verdict, c.judge_reason])
    with open(out / "case_metadata.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(("case_id", "domain"))
        writer.writerows(sorted((c.case_id, c.domain) for c in cases))
    protocols = ", ".join(sorted({str(r.get("protocol") or "discoverygym") for r in records}))
    (raw / "README.md").write_text(RAW_README.format(protocols=protocols), encoding="utf-8")
    for c in cases:
        folder = raw / c.case_id
        folder.mkdir()
        details = c.record.get("details") if isinstance(c.record.get("details"), dict) else {}
        _write_json(folder / "result.json", _clean({
            "task_name": c.case_id, "status": c.final_status, "best_score": c.best_score,
            "value": c.record.get("value"), "error": c.record.get("error"),
            "completed": details.get("completed"), "domain": c.domain,
            "protocol": c.record.get("protocol") or "discoverygym",
            "agent": c.record.get("agent"), "model": c.record.get("model")}))
        with open(folder / "submissions.jsonl", "w", encoding="utf-8") as fh:
            for line in c.attempts:
                fh.write(json.dumps(_clean(line), ensure_ascii=False, allow_nan=False) + "\n")
        if c.judge_verdict in ("valid", "invalid"):
            _write_json(folder / "judge_verdict.json",
                        {"is_valid": c.judge_verdict == "valid", "reason": c.judge_reason})
        _write_json(folder / "trajectory.json", _clean({
            "actions": details.get("actions", []), "usage": c.record.get("usage"),
            "answer": c.record.get("answer")}))
    return naturebench_figures(cases)
