"""A conformance check for any registered suite, in the spirit of Gymnasium's
`check_env`: what every suite promises, checked from the outside on real episodes.

- the plan holds cases, not seeds: `plan()` gives `Case`s (task, options) whose
  options name no seed (the runner's `--seeds` give those), and `default_seeds` are
  seeds;
- the plan round-trips: each planned spec builds an episode that names the same task,
  seed and options;
- the same spec and the same calls give the same record;
- the view holds no hidden state, and the truth is not written in the prompt or the
  workspace;
- bad input to every tool is a short error that costs nothing, and the episode goes
  on;
- a record survives JSON, and an absurd answer (or none) does not pass.

`check_suite` returns findings (empty when the suite conforms); the test suite runs it
over every registered suite, plugins included."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from typing import Any

from .budget import without_clocks
from .episode import Episode, EpisodeView
from .grid import Case, checked_seeds
from .suite import EpisodeSpec, Suite, get_suite

#: Option names that would carry seeds past the runner (the grid owns the seeds).
SEED_OPTIONS = ("seed", "seeds", "attempts")

#: Arguments no tool should accept: wrong shape, unknown names, hostile sizes.
BAD_ARGUMENTS: tuple[Any, ...] = (
    "not an object",
    {"__no_such_argument__": 1},
    {"answer": 10**400, "times": [10**400], "x": 10**400},
    {"answer": json.loads("[" * 40 + "0" + "]" * 40)},
    {"answer": "y" * 3_000_000},
)
#: How much of an error message may quote of the input.
MAX_ERROR_CHARS = 2_000


@dataclass(frozen=True)
class Finding:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


def _usage(episode: Episode) -> tuple[Any, ...]:
    u = episode.usage
    return (u.observations, u.cost, u.submissions, json.dumps(without_clocks(u.budget)))


def _call_charged(episode: Episode, name: str, args: Any) -> tuple[Any, bool]:
    """The tool's reply, and whether the call spent any of the episode's usage or
    budget. A budget may be a clock (the packages suite's solve time): the call's own
    duration is not a charge."""
    started = time.perf_counter()
    usage, budget = _usage(episode), episode.budget_left()
    result = episode.call(name, args)
    after = episode.budget_left()
    elapsed = time.perf_counter() - started
    spent = (budget - after) if budget is not None and after is not None else 0.0
    return result, _usage(episode) != usage or spent > elapsed + 1e-9


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what may differ between two identical plays (timings, and the
    host paths of an episode's temporary folders)."""
    out = json.loads(json.dumps(record, default=str))
    out["usage"].pop("wall_s", None)
    out["usage"]["budget"] = without_clocks(out["usage"].get("budget", []))
    details = out.get("details") or {}
    for key in [k for k in details if "time" in k or k.endswith("_s")]:
        details.pop(key)
    return out


def _truth_tokens(truth: Any) -> list[str]:
    """Spellings of a scalar truth that would give it away if printed: only for numbers
    with enough digits that a chance match is implausible."""
    if isinstance(truth, bool) or not isinstance(truth, int | float):
        return []
    value = float(truth)
    if not math.isfinite(value) or value == 0:
        return []
    text = f"{value:.6g}"
    digits = sum(c.isdigit() for c in text.split("e")[0].lstrip("-0."))
    return [text] if digits >= 5 else []


def _extreme(spec: Any) -> dict[str, Any]:
    """Arguments of the right JSON types with absurd values (-1e300, a huge count): they
    pass the schema, so a tool's own range checks (and what it charges before them)
    are reached."""
    values = {"number": -1e300, "integer": -(10**15), "string": "\x00", "array": [-1e300]}
    props = (spec.parameters or {}).get("properties", {})
    return {k: values[v.get("type")] for k, v in props.items() if v.get("type") in values}


def _bad_input(episode: Episode, findings: list[Finding], where: str) -> None:
    # tools that may end the episode (a valid-typed extreme answer is still an answer) last
    specs = sorted(episode.tool_specs(), key=lambda s: "submit" in s.name)
    for spec in specs:
        name = spec.name
        for args in (*BAD_ARGUMENTS, _extreme(spec)):
            result, charged = _call_charged(episode, name, args)
            label = f"{where}: {name}({str(args)[:40]})"
            if not result.is_error and not episode.done and args in BAD_ARGUMENTS:
                findings.append(Finding("bad input", f"{label} was accepted"))
            if len(result.text) > MAX_ERROR_CHARS:
                findings.append(Finding("bad input", f"{label} answered {len(result.text)} "
                                                     "characters"))
            if charged and result.is_error:
                findings.append(Finding("bad input", f"{label} was charged"))
            if episode.done:
                return


def _play_fixed(episode: Episode) -> None:
    """A fixed, suite-independent policy: a bad call to every tool, an absurd answer to
    each submitting tool (so that the record holds a truth where the suite records one),
    then stop."""
    specs = list(episode.tool_specs())
    for spec in specs:
        episode.call(spec.name, {"__no_such_argument__": 1})
    for spec in specs:
        if "submit" in spec.name and not episode.done:
            episode.call(spec.name, _extreme(spec))
    episode.end()


def check_spec(suite: Suite, spec: EpisodeSpec) -> list[Finding]:
    findings: list[Finding] = []
    where = f"{spec.suite}/{spec.task_id} seed={spec.seed}"
    episode = spec.build()
    if (episode.suite, episode.task_id, episode.seed) != (spec.suite, spec.task_id, spec.seed):
        findings.append(Finding("plan round trip", f"{where} built "
                                f"{episode.suite}/{episode.task_id} seed={episode.seed}"))

    view = episode.view()
    if not isinstance(view, EpisodeView) or any(isinstance(v, Episode) for v in
                                                 (getattr(view, s, None) for s in view.__slots__)):
        findings.append(Finding("view", f"{where}: the view holds the episode"))
    prompt, workspace = episode.prompt, episode.workspace()
    if prompt != spec.build().prompt:
        findings.append(Finding("determinism", f"{where}: the prompt differs between builds"))

    _bad_input(episode, findings, where)

    records = []
    for _ in range(2):
        played = spec.build()
        _play_fixed(played)
        records.append(played.record(agent="conformance").to_dict())
    if _comparable(records[0]) != _comparable(records[1]):
        findings.append(Finding("determinism", f"{where}: the same spec and calls gave "
                                               "different records"))
    truth = records[0].get("truth")
    if truth is None:  # no answer, no truth in the record: ask the scorer directly
        try:
            truth = spec.build()._score(0.0).truth
        except Exception:  # noqa: BLE001 - an answer type other than a number
            truth = None
    shown = prompt + repr(sorted(workspace)) + " ".join(
        repr(v)[:100_000] for v in workspace.values())
    for token in _truth_tokens(truth):
        if token in shown:
            findings.append(Finding("hidden truth", f"{where}: the truth {token} is in the "
                                                    "prompt or workspace"))
    for record in records:
        try:
            if json.loads(json.dumps(record)) != record:
                findings.append(Finding("record", f"{where}: the record changes through JSON"))
        except (TypeError, ValueError) as exc:
            findings.append(Finding("record", f"{where}: the record is not JSON ({exc})"))
    if records[0].get("passed"):
        findings.append(Finding("record", f"{where}: an absurd answer (or none) passed"))
    return findings


def check_plan(suite: Suite) -> list[Finding]:
    """The default plan holds cases without seeds; the default seeds are seeds."""
    findings = []
    try:
        checked_seeds(suite.default_seeds)
    except (TypeError, ValueError) as exc:
        findings.append(Finding("plan", f"{suite.name}: default_seeds: {exc}"))
    for case in suite.plan():
        if not isinstance(case, Case):
            return findings + [Finding("plan", f"{suite.name}: plan() gave a "
                                               f"{type(case).__name__}, not a Case (task, "
                                               "options): the runner gives the seeds")]
        named = sorted(set(case.options) & set(SEED_OPTIONS))
        if named:
            findings.append(Finding("plan", f"{suite.name}: case {case.task_id} carries "
                                            f"{', '.join(named)}: seeds come from --seeds"))
            break
    run_options = sorted({o.name for o in suite.run_options} & set(SEED_OPTIONS))
    if run_options:
        findings.append(Finding("plan", f"{suite.name}: run option(s) {', '.join(run_options)} "
                                        "repeat a case; the runner's --seeds do that"))
    return findings


def check_suite(name: str, n_specs: int = 1) -> list[Finding]:
    """Findings for the suite's default plan and its first `n_specs` episodes."""
    suite = get_suite(name)
    plan_findings = check_plan(suite)
    if plan_findings:
        return plan_findings
    specs = suite.default_episodes()[:n_specs]
    if not specs:
        return [Finding("plan", f"{name}: the default plan is empty")]
    findings = []
    for spec in specs:
        findings += check_spec(suite, spec)
    return findings
