"""`discoverygym verify RUN`: hold a run to its plan and replay every record.

Commit, then reveal: a keyed evaluation publishes its key's commitment first; after it,
the key is revealed and anyone can rebuild each planned episode with it, re-score the
recorded answer through the rebuilt episode and compare with what the record says.

A run is verified only when all of this holds:

- run.json holds a plan (run/plan.py) whose digest matches, that agrees with run.json's
  config, and that its run options and seeds make again where run.json names them;
- the key given is the plan's key (id and commitment, and the published commitment
  when one is given); a keyed plan is never verified without its key, and a public
  plan is never verified "against" a key;
- every planned episode has exactly one record, and no record lies outside the plan
  (an infrastructure failure followed by its retry on `--resume` is the one exception:
  the failure gives way, as `records.dedupe` has it);
- every record carries the plan's key id (none in a public run);
- each record's labels (world, protocol, metric name, threshold), which the leaderboard
  groups by, are the rebuilt episode's, so a run played under one protocol cannot be
  shown under a harder one;
- each record's answer, truth, passed, score and metric value replay. Numbers are
  compared with a relative tolerance of REL_TOL (1e-9) and an absolute floor of ABS_TOL
  (1e-12, for values that should be zero): honest runs differ in the last bits where
  sums are ordered by the process and its BLAS threads, forgeries by far more;
- a record that cannot be replayed (never played, an answer that cannot be re-scored)
  is accepted only as a failure: passed false and score 0. Claiming more is a mismatch.
  A score that reads files the agent left (the packages suite) cannot be replayed from
  a record: its truth is confirmed and the summary says the score was not replayed.

Everything read is hostile input: lines are bounded in size and nesting, and a line
that cannot be read counts against the run."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core import EpisodeSpec, episode_key, get_suite
from ..core.bounded import check_value, clip
from ..core.keys import Key
from ..core.record import _json_default
from .executors import single_threaded_numerics
from .note import VERIFIED_FILE, sha256_file
from .plan import plain, plan_digest, planned_identities

MAX_LINE_CHARS = 8_000_000
_SKIP_CHUNK = 1 << 20
MAX_RECORDS = 100_000
MAX_RUN_JSON_BYTES = 64_000_000
REL_TOL = 1e-9
ABS_TOL = 1e-12

OK = "ok"
TRUTH_ONLY = "truth confirmed"       # the score reads files the record does not hold
NOT_REPLAYABLE = "not replayable"    # accepted as the failure it claims to be
SUPERSEDED = "superseded"            # an infrastructure failure retried on --resume
MISMATCH = "mismatch"
MISSING = "missing"
UNREADABLE = "unreadable"
ACCEPTED = (OK, TRUTH_ONLY, NOT_REPLAYABLE, SUPERSEDED)
STATUSES = (OK, TRUTH_ONLY, NOT_REPLAYABLE, SUPERSEDED, MISMATCH, MISSING, UNREADABLE)


@dataclass
class Verdict:
    """The outcome for one line of records.jsonl (line 0: a planned episode with no
    record)."""

    line: int
    episode: str
    status: str
    detail: str = ""


class RunRefused(ValueError):
    """The run cannot be verified at all (no plan, an edited plan, the wrong key); one
    line for the user."""


class KeyMismatch(RunRefused):
    """The key given is not the run's key (one line)."""


@dataclass
class RunReport:
    """What `verify_run` found: the plan it held the run to and a verdict per line."""

    run: Path
    plan_digest: str
    key_id: str | None
    commitment: str | None
    n_planned: int
    verdicts: list[Verdict] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {s: sum(v.status == s for v in self.verdicts) for s in STATUSES}

    @property
    def verified(self) -> bool:
        return all(v.status in ACCEPTED for v in self.verdicts)

    def summary_line(self) -> str:
        c = self.counts()
        line = (f"{c[OK]} confirmed, {c[MISMATCH]} mismatched, {c[MISSING]} missing, "
                f"{c[UNREADABLE]} unreadable of {self.n_planned} planned")
        if c[TRUTH_ONLY]:
            line += f"; {c[TRUTH_ONLY]} truth confirmed, score not replayable"
        if c[NOT_REPLAYABLE]:
            line += f"; {c[NOT_REPLAYABLE]} not replayable, counted as failures"
        if c[SUPERSEDED]:
            line += f"; {c[SUPERSEDED]} infrastructure failures retried"
        return line

    def to_json(self, records_sha256: str, run_json_sha256: str) -> dict[str, Any]:
        """verified.json: what was confirmed, against which key and plan, and the hashes
        of the files it was confirmed on (a later edit makes the note stale)."""
        return {"verdict": "verified" if self.verified else "rejected",
                "verified_at": datetime.now(timezone.utc).isoformat(),
                "key_id": self.key_id, "commitment": self.commitment,
                "plan_digest": self.plan_digest, "n_planned": self.n_planned,
                "counts": self.counts(), "summary": self.summary_line(),
                "tolerance": {"relative": REL_TOL, "absolute": ABS_TOL},
                "records_sha256": records_sha256, "run_json_sha256": run_json_sha256,
                "problems": [asdict(v) for v in self.verdicts if v.status not in ACCEPTED][:50]}


# ---- reading -----------------------------------------------------------------------------

def read_bounded_records(path: Path) -> list[tuple[int, dict[str, Any] | str]]:
    """(line number, record) per line of a records file; an unreadable line gives the
    reason instead of a record. Blank lines are skipped."""
    out: list[tuple[int, dict[str, Any] | str]] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        number = 0
        while line := fh.readline(MAX_LINE_CHARS + 1):  # a line is never read whole
            number += 1
            if number > MAX_RECORDS:
                out.append((number, f"more than {MAX_RECORDS} records; the rest unread"))
                break
            if len(line) > MAX_LINE_CHARS:
                while line and not line.endswith("\n"):  # the rest of it, a chunk at a time
                    line = fh.readline(_SKIP_CHUNK)
                out.append((number, f"line longer than {MAX_LINE_CHARS} characters"))
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as exc:
                out.append((number, f"not a JSON record ({type(exc).__name__})"))
                continue
            out.append((number, record if isinstance(record, dict) else "not a JSON object"))
    return out


def read_run_info(run_json: Path) -> dict[str, Any]:
    """run.json, bounded; RunRefused when it is missing or not a JSON object."""
    if not run_json.is_file():
        raise RunRefused(f"no run.json at {run_json}: the run's plan is unknown")
    with run_json.open("rb") as fh:
        raw = fh.read(MAX_RUN_JSON_BYTES + 1)
    if len(raw) > MAX_RUN_JSON_BYTES:
        raise RunRefused("run.json is too large to be a run's")
    try:
        info = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        raise RunRefused("run.json is not JSON") from None
    if not isinstance(info, dict):
        raise RunRefused("run.json is not a JSON object")
    return info


# ---- the plan and the key ----------------------------------------------------------------

def checked_plan(info: dict[str, Any], pinned_digest: str | None) -> tuple[dict[str, Any], str]:
    """run.json's plan after every check that needs no key: present, its digest (and
    the pinned one), agreeing with run.json's config, and remade from its options."""
    plan, digest = info.get("plan"), info.get("plan_digest")
    if not isinstance(plan, dict) or not isinstance(digest, str):
        raise RunRefused("run.json holds no plan (a run made before plans were recorded, or "
                         "an edited run.json): nothing can be confirmed")
    try:
        computed = plan_digest(plan)
    except (TypeError, ValueError, RecursionError):
        raise RunRefused("run.json's plan cannot be read back as JSON") from None
    if computed != digest:
        raise RunRefused("run.json's plan does not match its plan_digest: the plan was edited")
    if pinned_digest is not None and pinned_digest.strip().lower() != digest:
        raise RunRefused(f"the run's plan digest is {digest}, not the published "
                         f"{clip(pinned_digest, 80)}")
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    for name in ("suite", "key_id", "key_commitment", "options", "seeds"):
        if name in config and (name in plan or name in ("suite", "key_id", "key_commitment")):
            if _plain_or_none(config[name]) != plan.get(name):
                raise RunRefused(f"run.json's config and plan disagree on {name}")
    _check_replanned(plan)
    return plan, digest


def _plain_or_none(value: Any) -> Any:
    try:
        return plain(value)
    except (TypeError, ValueError, RecursionError):
        return None


class _Unplanned(ValueError):
    """The plan's episode count is not what its options and seeds make."""


def _check_replanned(plan: dict[str, Any]) -> None:
    """Where the plan names its run options and seeds, they must make its episodes."""
    if "options" not in plan or "seeds" not in plan:
        return
    from ..core import plan_episodes

    try:
        options, seeds, limit = plan["options"], plan["seeds"], plan.get("limit")
        check_value(options, what="the plan's options")
        if not isinstance(seeds, list) or len(seeds) > MAX_RECORDS:
            raise ValueError(f"seeds must be a list of at most {MAX_RECORDS}")
        suite = get_suite(str(plan.get("suite")))
        # count before crossing: a hostile plan may ask for millions of episodes
        total = len(suite.plan(**options)) * len(seeds)
        if limit is not None:
            total = min(total, int(limit))
        if total != len(plan.get("episodes") or ()):
            raise _Unplanned(f"its options and seeds make {total} episodes, its list "
                             f"{len(plan.get('episodes') or ())}")
        specs = plan_episodes(suite, options, seeds)
        remade = [[s.task_id, s.seed, plain(s.options)] for s in specs]
        if limit is not None:
            remade = remade[: int(limit)]
    except _Unplanned as exc:
        raise RunRefused(f"run.json's planned episodes are not the plan of its options and "
                         f"seeds ({exc}): the plan was edited") from None
    except Exception as exc:  # noqa: BLE001 - an edited plan may break the planner anyhow
        raise RunRefused(f"run.json's options and seeds make no plan: {type(exc).__name__}: "
                         f"{clip(str(exc), 200)}") from None
    if remade != plan.get("episodes"):
        raise RunRefused("run.json's planned episodes are not the plan of its options and "
                         "seeds: the plan was edited")


def check_key(plan: dict[str, Any], key: Key | None, commitment: str | None,
              key_given: bool) -> None:
    """The key must be the plan's (and the published commitment's, when given)."""
    plan_key, plan_commitment = plan.get("key_id"), plan.get("key_commitment")
    if commitment is not None and (key is None or key.commitment != commitment.strip().lower()):
        raise KeyMismatch("the key does not match the published commitment")
    if plan_key is None:
        if key_given:
            raise KeyMismatch("run.json plans public draws (no key): this run was not played "
                              "with the key given, so it cannot be confirmed against it")
        return
    if key is None:
        raise KeyMismatch(f"run.json says the run was drawn with key {clip(str(plan_key), 80)}; "
                          "give it with --key-file")
    if key.id != plan_key or key.commitment != plan_commitment:
        raise KeyMismatch(f"run.json says the run was drawn with key {clip(str(plan_key), 80)}; "
                          f"the key given is {key.id}")


# ---- the run -----------------------------------------------------------------------------

def verify_run(run: Path, key: Key | None, *, commitment: str | None = None,
               pinned_digest: str | None = None, key_given: bool = False) -> RunReport:
    """Hold the run directory `run` to its plan and replay every record. Raises
    RunRefused (KeyMismatch for the key) before any replay when the run cannot be
    verified at all. `key_given`: the user named a key (not just the environment)."""
    records_path = run / "records.jsonl"
    if not records_path.is_file():
        raise RunRefused(f"no records at {records_path}")
    plan, digest = checked_plan(read_run_info(run / "run.json"), pinned_digest)
    check_key(plan, key, commitment, key_given)
    try:
        identities = planned_identities(plan)
    except ValueError as exc:
        raise RunRefused(f"run.json's plan is malformed: {exc}") from None
    if len(set(identities)) != len(identities):
        raise RunRefused("run.json's plan names an episode twice")
    suite = plan["suite"]
    specs = {identity: spec for identity, spec in zip(
        identities, _plan_specs(plan, key), strict=True)}
    report = RunReport(run, digest, plan.get("key_id"), plan.get("key_commitment"),
                       len(identities))
    lines = read_bounded_records(records_path)
    by_identity: dict[tuple[str, int], list[tuple[int, dict[str, Any]]]] = {}
    for number, record in lines:
        if isinstance(record, str):
            report.verdicts.append(Verdict(number, "?", UNREADABLE, record))
            continue
        identity = _identity(record)
        if identity not in specs:
            report.verdicts.append(Verdict(number, _name(record), MISMATCH,
                                           "not in run.json's plan"))
            continue
        by_identity.setdefault(identity, []).append((number, record))
    for identity, spec in specs.items():
        name = _spec_name(spec, identity[1], plan)
        found = by_identity.get(identity)
        if not found:
            report.verdicts.append(Verdict(0, name, MISSING, "planned, but no record"))
            continue
        *earlier, (number, record) = found
        if all(_is_retried_failure(r) and not _label_problems(r, _lost_labels(spec))
               for _, r in earlier):
            report.verdicts += [Verdict(n, name, SUPERSEDED, "infrastructure failure, "
                                        "played again on --resume") for n, _ in earlier]
        else:
            first = found[0][0]
            report.verdicts += [Verdict(n, name, MISMATCH, f"a second record of the episode "
                                        f"on line {first}") for n, _ in found[1:]]
            number, record = found[0]
        report.verdicts.append(_checked_record(number, name, record, spec, suite, plan))
    report.verdicts.sort(key=lambda v: (v.line == 0, v.line))
    return report


def _plan_specs(plan: dict[str, Any], key: Key | None) -> list[EpisodeSpec]:
    keyed = key if plan.get("key_id") is not None else None
    return [EpisodeSpec(plan["suite"], task, seed, dict(options), keyed)
            for task, seed, options in plan["episodes"]
            for _ in range(int(plan.get("epochs", 1)))]


def _identity(record: dict[str, Any]) -> tuple[str, int] | None:
    try:
        details = record.get("details") if isinstance(record.get("details"), dict) else {}
        epoch = details.get("epoch", 1)
        seed = record["seed"]
        if (isinstance(seed, bool) or not isinstance(seed, int) or isinstance(epoch, bool)
                or not isinstance(epoch, int)):
            return None
        return episode_key(record["suite"], record["task_id"], seed, record["options"]), epoch
    except (KeyError, TypeError, ValueError, RecursionError):
        return None


def _options_text(options: Any) -> str:
    """` world=A law=x ...`: the options that tell two episodes of one task apart (a
    row without them reads like its neighbours), as plain text, in key order."""
    if not isinstance(options, dict) or not options:
        return ""
    return "".join(f" {k}={v if isinstance(v, (str, int, float, bool)) else json.dumps(v, default=str)}"
                   for k, v in sorted(options.items(), key=lambda kv: str(kv[0])))


def _name(record: dict[str, Any]) -> str:
    return clip(f"{record.get('suite')}/{record.get('task_id')} seed={record.get('seed')}"
                + _options_text(record.get("options")), 160)


def _spec_name(spec: EpisodeSpec, epoch: int, plan: dict[str, Any]) -> str:
    name = f"{spec.suite}/{spec.task_id} seed={spec.seed}" + _options_text(spec.options)
    if int(plan.get("epochs", 1)) > 1:
        name += f" epoch={epoch}"
    return clip(name, 160)


def _is_retried_failure(record: dict[str, Any]) -> bool:
    return (bool((record.get("details") or {}).get("infrastructure_failure"))
            and not claims_more_than_failure(record))


def claims_more_than_failure(record: dict[str, Any]) -> bool:
    """Whether a record claims anything a failure does not: a pass or a score above 0
    (a score that is no finite number counts as a claim)."""
    score = record.get("score")
    if record.get("passed") is not False:
        return True
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        return True
    return not math.isfinite(score) or score > 0


def _checked_record(number: int, name: str, record: dict[str, Any], spec: EpisodeSpec,
                    suite: str, plan: dict[str, Any]) -> Verdict:
    """The key id, then the replay of one planned episode's record."""
    want = plan.get("key_id")
    if record.get("key_id") != want:
        got = record.get("key_id")
        return Verdict(number, name, MISMATCH,
                       f"key id {clip(repr(got), 60) if got else 'missing (public draws)'}; "
                       f"run.json's is {want or 'none (public draws)'}")
    return replay(number, name, record, spec)


LABELS = ("world", "protocol", "metric", "threshold")


def _label_problems(record: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """The labels of `record` (of LABELS, those `expected` names) that are not the
    replayed episode's: the leaderboard groups records by them."""
    return [f"{name} {clip(repr(record.get(name)), 40)}, replay {clip(repr(want), 40)}"
            for name, want in expected.items() if not same_json(record.get(name), want)]


def _lost_labels(spec: EpisodeSpec) -> dict[str, Any]:
    """The world and protocol the runner writes on an episode the infrastructure lost
    (its metric is no episode's: a failure of any metric may say it was lost)."""
    from .runner import infrastructure_failure_record

    lost = infrastructure_failure_record(spec, "", None)
    return {name: lost.get(name) for name in ("world", "protocol")}


def _unreplayable(number: int, name: str, record: dict[str, Any], why: str,
                  labels: list[str] | None = None) -> Verdict:
    if claims_more_than_failure(record):
        why += ", yet it claims a pass or a score"
    elif not labels:
        return Verdict(number, name, NOT_REPLAYABLE, f"{why}; counted as a failure")
    return Verdict(number, name, MISMATCH, "; ".join([why, *(labels or [])]))


def replay(number: int, name: str, record: dict[str, Any], spec: EpisodeSpec) -> Verdict:
    """Rebuild one planned episode, re-score the record's answer, compare."""
    if (record.get("details") or {}).get("infrastructure_failure"):
        return _unreplayable(number, name, record, "never played (infrastructure failure)",
                             _label_problems(record, _lost_labels(spec)))
    try:
        episode = spec.build()
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        return _unreplayable(number, name, record, f"the episode cannot be built: "
                             f"{type(exc).__name__}: {clip(str(exc), 200)}")
    problems = _label_problems(record, {"world": episode.world, "protocol": episode.protocol})
    answer = record.get("answer")
    try:
        check_value(answer, what="the recorded answer")
        with single_threaded_numerics():
            if answer is None:  # nothing was submitted: the record must be a failure
                truth, passed, score, value = episode.replay_truth(), False, 0.0, None
                metric, threshold = episode._metric_name(), None
            else:
                verdict = episode.replay_score(answer)
                truth, passed, score, value = (verdict.truth, bool(verdict.passed),
                                               float(verdict.score), verdict.value)
                metric, threshold = verdict.metric, verdict.threshold
    except Exception as exc:  # noqa: BLE001 - a hostile answer or a scorer failure
        return _unreplayable(number, name, record, f"cannot re-score: {type(exc).__name__}: "
                             f"{clip(str(exc), 200)}", problems)
    if not same_json(record.get("truth"), truth):
        problems.append("truth differs")
    # with no answer the verdict is a failure whatever files the agent left
    if episode.writes_files() and answer is not None:
        if problems:
            return Verdict(number, name, MISMATCH, "; ".join(problems))
        return Verdict(number, name, TRUTH_ONLY, "truth confirmed; the score reads files the "
                       "agent left, which the record does not hold")
    if record.get("passed") is not passed:
        problems.append(f"passed {clip(repr(record.get('passed')), 20)}, replay {passed!r}")
    if not same_number(record.get("score"), score):
        problems.append(f"score {clip(repr(record.get('score')), 40)}, replay {score!r}")
    if not same_json(record.get("value"), value):
        problems.append(f"metric value {clip(repr(record.get('value')), 40)}, replay "
                        f"{clip(repr(value), 40)}")
    problems += _label_problems(record, {"metric": metric, "threshold": threshold})
    return Verdict(number, name, MISMATCH if problems else OK, "; ".join(problems))


# ---- comparing ---------------------------------------------------------------------------

def same_number(recorded: Any, replayed: Any) -> bool:
    """Equal within REL_TOL relative (ABS_TOL absolute near zero); NaN equals NaN."""
    if isinstance(recorded, bool) or not isinstance(recorded, (int, float)):
        return False
    if isinstance(replayed, bool) or not isinstance(replayed, (int, float)):
        return False
    a, b = float(recorded), float(replayed)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def same_json(recorded: Any, replayed: Any) -> bool:
    """`recorded` (as a record holds it) equals `replayed` (as the episode gives it):
    the same structure, strings and flags exactly, numbers by `same_number`."""
    try:
        expected = json.loads(json.dumps(replayed, default=_json_default))
    except (TypeError, ValueError, RecursionError):
        return False
    return _same(recorded, expected)


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, bool) or b is None or isinstance(b, str):
        return type(a) is type(b) and a == b
    if isinstance(b, (int, float)):
        return same_number(a, b)
    if isinstance(b, list):
        return (isinstance(a, list) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(b, dict):
        return (isinstance(a, dict) and a.keys() == b.keys()
                and all(_same(a[k], b[k]) for k in b))
    return False


# ---- the note beside the run -------------------------------------------------------------

def write_verified(report: RunReport) -> Path:
    """RUN/verified.json (see RunReport.to_json)."""
    from .records import write_json

    path = report.run / VERIFIED_FILE
    write_json(path, report.to_json(sha256_file(report.run / "records.jsonl"),
                                    sha256_file(report.run / "run.json")))
    return path
