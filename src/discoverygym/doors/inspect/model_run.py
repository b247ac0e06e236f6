"""`discoverygym run SUITE --model MODEL`: LLM agents through Inspect AI, written to
the same run directory format as scripted runs (records.jsonl, summary.json,
run.json), plus Inspect's own logs under `inspect-logs/` (`inspect view` reads them)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core import EpisodeSpec, Suite, get_suite
from ...run.plan import make_plan
from ...run.run_dir import RunDirectory
from ...run.runner import RunResult, check_resumed_key
from ...sandbox import SandboxConfig

SCORER = "episode_record"


def parse_model_args(pairs: Sequence[str]) -> dict[str, Any]:
    """`k=v` strings into model arguments; numbers and true/false are converted."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--model-arg takes key=value, got {pair!r}")
        out[key.strip().replace("-", "_")] = _scalar(value.strip())
    return out


def _scalar(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _failure_record(spec: EpisodeSpec, model: str, error: str, epoch: int) -> dict[str, Any]:
    """A failed record for a sample Inspect could not finish (never dropped)."""
    from .task import AGENT_NAME

    episode = spec.build()
    record = episode.record(agent=AGENT_NAME, model=model, error=error)
    record.details["epoch"] = epoch
    return json.loads(record.to_json())


def run_model(
    suite: str | Suite,
    specs: Sequence[EpisodeSpec],
    *,
    model: str,
    out_dir: Path,
    config: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    model_args: dict[str, Any] | None = None,
    limit: int | None = None,
    epochs: int | None = None,
    max_connections: int | None = None,
    resume: bool = False,
    sandbox: SandboxConfig | None = None,
    prices: dict[str, tuple[float, float]] | None = None,
    display: str = "none",
) -> RunResult:
    """Run `specs` with an LLM (any Inspect model string) and write the run directory.

    `model_args` go to the provider (`base_url` becomes the model's endpoint);
    `limit` keeps the first N episodes; `epochs` plays each K times (records carry
    details["epoch"]); `max_connections` caps concurrent model requests; `extra` is
    passed to Inspect's `eval` as further keyword arguments; `sandbox` replaces the
    suite's interpreter limits (`Suite.python_limits`).

    Before anything is played the model's server is asked once (`endpoint.py`):
    nothing answering raises EndpointUnreachable (a ValueError). A run stopped by
    Ctrl-C (or SIGTERM, see run/stop.py) keeps the records of the samples that
    finished, writes summary.json marked interrupted and returns `interrupted=True`."""
    from .endpoint import check_endpoint

    check_endpoint(model, model_args)

    from inspect_ai import eval as inspect_eval

    from . import provider  # noqa: F401 - registers the scripted `discoverygym/` models
    from .limits import sandbox_config
    from .task import sample_id, suite_task

    s = get_suite(suite) if isinstance(suite, str) else suite
    run_dir = RunDirectory(out_dir, resume=resume)
    check_resumed_key(run_dir, specs)
    n_epochs = int(epochs or 1)
    todo = [spec for spec in specs
            if not all(run_dir.is_done(spec, e) for e in range(1, n_epochs + 1))]
    if limit is not None:
        todo = todo[: int(limit)]
    planned_from = config or {}
    planned = specs if limit is None else specs[: int(limit)]
    plan = make_plan(planned, options=planned_from.get("options"),
                     seeds=planned_from.get("seeds"), epochs=n_epochs, limit=limit)
    run_dir.write_info(plan, who=model, executor="inspect", n_planned=len(specs),
                       config=config or {},
                       inspect={"model": model, "model_args": model_args or {},
                                "epochs": n_epochs, "limit": limit,
                                "max_connections": max_connections})

    failures: list[str] = []
    new_records: list[dict[str, Any]] = []
    interrupted = False
    # The run directory may lie outside ./runs: hide it from the sandbox too.
    sandbox = sandbox or sandbox_config(s.name)
    sandbox = dataclasses.replace(
        sandbox, hidden_paths=(*sandbox.hidden_paths, str(run_dir.path.resolve())))
    if todo:
        task = suite_task(s, list(todo), sandbox=sandbox, prices=prices)
        provider_args = dict(model_args or {})
        # `--model-arg base_url=...` is the endpoint itself, not a provider argument.
        base_url = provider_args.pop("base_url", None)
        eval_args: dict[str, Any] = {"model": model, "model_args": provider_args,
                                     "model_base_url": base_url,
                                     "log_dir": str(run_dir.path / "inspect-logs"),
                                     "display": display, "epochs": n_epochs,
                                     "fail_on_error": False}
        if max_connections is not None:
            eval_args["max_connections"] = int(max_connections)
        eval_args.update(extra or {})
        log_dir = run_dir.path / "inspect-logs"
        earlier = set(log_dir.iterdir()) if log_dir.is_dir() else set()
        try:
            logs = list(inspect_eval(task, **eval_args))
        except KeyboardInterrupt:  # stopped before Inspect could end the eval itself
            interrupted, logs = True, []
        # Inspect ends a Ctrl-C'd eval itself: the log it writes is "cancelled", and what
        # eval returns may be nothing at all; the log on disk holds the finished samples.
        if interrupted or not logs or any(log.status == "cancelled" for log in logs):
            written = _logs_written(log_dir, earlier)
            if interrupted or any(log.status == "cancelled" for log in [*logs, *written]):
                interrupted = True
                logs = logs if any(log.samples for log in logs) else written
        by_id = {sample_id(spec): spec for spec in todo}
        with run_dir.writer() as writer:
            for log in logs:
                if log.error is not None and not log.samples and not interrupted:
                    failures.append(f"inspect eval failed: {log.error.message}")
                for sample in log.samples or []:
                    spec = by_id.get(str(sample.id))
                    if spec is None or run_dir.is_done(spec, int(sample.epoch)):
                        continue
                    if interrupted and _record_of(sample) is None:
                        continue  # cut short by the stop: --resume plays it again
                    record = _sample_record(spec, sample, model, failures)
                    writer.write(record)
                    new_records.append(record)

    n_planned = len(specs) if limit is None else min(int(limit), len(specs))
    fields: dict[str, Any] = {"n_planned": n_planned * n_epochs, "epochs": n_epochs,
                              "n_infrastructure_failures": len(failures),
                              "interrupted": interrupted}
    if failures:
        fields["infrastructure_failures"] = failures
    records, summary = run_dir.finish(_usage_and_isolation, **fields)
    return RunResult(run_dir.path, records, summary, len(new_records), failures, interrupted)


def _logs_written(log_dir: Path, earlier: set[Path]) -> list[Any]:
    """The eval logs Inspect wrote under `log_dir` in this session (not in `earlier`):
    a stopped run keeps what their finished samples hold. An unreadable log (torn by
    the stop) is passed over."""
    from inspect_ai.log import read_eval_log

    logs = []
    for path in sorted(set(log_dir.iterdir()) - earlier) if log_dir.is_dir() else []:
        if path.suffix not in (".eval", ".json") or not path.is_file():
            continue
        try:
            logs.append(read_eval_log(str(path)))
        except Exception:  # noqa: BLE001 - a log torn by the stop holds nothing to keep
            continue
    return logs


def _record_of(sample: Any) -> dict[str, Any] | None:
    """The EpisodeRecord a finished sample's score carries (None: no score)."""
    score = (sample.scores or {}).get(SCORER)
    return (score.metadata or {}).get("record") if score else None


def _usage_and_isolation(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens and cost over the run, and the sandbox isolation levels its episodes had."""
    isolation = sorted({str(r.get("details", {}).get("sandbox", {}).get("isolation"))
                        for r in records if r.get("details", {}).get("sandbox")})
    return {"total_usage": {k: sum(float(r["usage"].get(k, 0) or 0) for r in records)
                            for k in ("input_tokens", "output_tokens", "usd")},
            "sandbox_isolation": isolation}


def _sample_record(spec: EpisodeSpec, sample: Any, model: str,
                   failures: list[str]) -> dict[str, Any]:
    """The record a finished Inspect sample carries, or a failed one naming why there is
    none (a sample Inspect could not finish is never dropped)."""
    record = _record_of(sample)
    if record is None:
        reason = sample.error.message if sample.error else "no score"
        failures.append(f"{spec.task_id} seed={spec.seed} epoch={sample.epoch}: "
                        f"{reason.splitlines()[0] if reason else reason}")
        record = _failure_record(spec, model, f"inspect sample error: {reason}",
                                 int(sample.epoch))
    record.setdefault("details", {})["epoch"] = int(sample.epoch)
    record["details"]["inspect_sample_id"] = str(sample.id)
    return record
