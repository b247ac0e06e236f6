"""The `package build` driver: runs the stages in order, resumable and atomic.

Each stage writes into a fresh temporary folder beside its target (`WORK/.tmp-<stage>-*`);
its gate file (`gate.json`: the input digest, the findings, the digest of the outputs)
is written last, and the folder is then renamed to `WORK/<stage>`. A build killed at any
moment therefore leaves either the stage's previous complete folder or none, never a
partial one; leftovers of a killed build are removed when the next one starts. The
build removes or replaces only what it made: every folder it creates holds a marker
(`STAGE_MARKER`, written first), and a folder without one, inside --work and named like
a stage, `.tmp-*` or `.old-*`, is the user's: it is left alone, and a stage folder of
the user's stops the build in one line before anything runs. A stage
is skipped when its gate passed with the same input digest (the record parts it reads,
the outputs it reads, the pipeline's code). The first gate that fails stops the build.
One build at a time per work folder (an advisory lock)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .format.check import Finding
from .record import Record, as_record, canonical_digest
from .review import Reviewer
from .stages import STAGE_MARKER, STAGES, Context, tree_digest

GATE = "gate.json"
#: The pipeline's code and the package-format code its gates run (relative to this folder).
_CODE_FILES = ("record.py", "stages.py", "metrics.py", "firewall.py", "review.py", "build.py",
               "format/check.py", "format/archives.py", "format/evaluator_runner.py",
               "format/scoring.py", "format/package.py")


def _code_digest() -> str:
    """The pipeline's own code: a new version of it reruns every stage."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in _CODE_FILES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()


class BuildBusy(RuntimeError):
    """Another build holds the work folder."""


class ForeignFolder(RuntimeError):
    """A folder in the work folder that the build would replace was not made by it."""


def _mark(folder: Path, stage: str) -> None:
    """Say that `folder` is a stage folder this program made (before anything else is
    written in it, so that even a build killed at once leaves only marked folders)."""
    (folder / STAGE_MARKER).write_text(json.dumps({"stage": stage}) + "\n")


def _ours(folder: Path) -> bool:
    """A real folder (no link) that holds the marker as a regular file."""
    marker = folder / STAGE_MARKER
    return (not folder.is_symlink() and folder.is_dir() and not marker.is_symlink()
            and marker.is_file())


def _check_targets(work: Path) -> None:
    """Refuse, before any stage runs, a stage folder of the user's in --work."""
    for stage in STAGES:
        target = work / stage.name
        if (target.exists() or target.is_symlink()) and not _ours(target):
            raise ForeignFolder(f"{target} was not made by package build (it has no "
                                f"{STAGE_MARKER}); move it away or choose another --work")


@dataclass(frozen=True)
class StageOutcome:
    name: str
    ran: bool  # False: skipped, its inputs unchanged since a passed gate
    passed: bool
    findings: list[dict[str, str]]


@dataclass
class BuildResult:
    record_id: str
    work: Path
    stages: list[StageOutcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return len(self.stages) == len(STAGES) and all(s.passed for s in self.stages)

    @property
    def failed_stage(self) -> str | None:
        return next((s.name for s in self.stages if not s.passed), None)

    @property
    def package(self) -> Path | None:
        """The sealed package folder, when every gate passed."""
        return self.work / "seal" / self.record_id if self.passed else None

    @property
    def ran(self) -> list[str]:
        return [s.name for s in self.stages if s.ran]


def read_gate(stage_dir: Path) -> dict[str, Any] | None:
    try:
        gate = json.loads((stage_dir / GATE).read_text())
    except (OSError, ValueError):
        return None
    return gate if isinstance(gate, dict) else None


def _write_json_atomic(path: Path, value: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    with tmp.open("w") as fh:
        json.dump(value, fh, indent=1, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _clean_leftovers(work: Path) -> None:
    """Remove what a killed build of ours left (marked); anything else stays."""
    for leftover in [*work.glob(".tmp-*"), *work.glob(".old-*")]:
        if _ours(leftover):
            shutil.rmtree(leftover, ignore_errors=True)


def _swap_in(tmp: Path, target: Path) -> None:
    """Replace target by tmp (two renames: a kill between them leaves no target, so the
    stage simply reruns). A target without the marker is never replaced."""
    old = None
    if target.exists() or target.is_symlink():
        if not _ours(target):
            raise ForeignFolder(f"{target} was not made by package build; left as it is")
        old = target.with_name(f".old-{target.name}-{uuid.uuid4().hex[:8]}")
        os.rename(target, old)
    os.rename(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _locked(work: Path) -> Iterator[None]:
    with (work / ".lock").open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise BuildBusy(f"another build is running in {work}") from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _as_dicts(findings: list[Finding]) -> list[dict[str, str]]:
    return [{"rule": f.rule, "path": f.path, "message": f.message} for f in findings]


def build(record: str | Path | Record | dict[str, Any], work_dir: str | Path, *,
          reviewer: Reviewer | None = None, reviewer_name: str | None = None,
          review_timeout_s: float = 120.0, force: bool = False) -> BuildResult:
    """Build (or resume building) the package of `record` in `work_dir`.

    Stages whose inputs are unchanged since their gate passed are skipped (`force`
    reruns all). `reviewer` is an async prompt -> reply function (e.g.
    `validity.inspect_grader(model)`); without one the review stage records that no
    review was asked for. Raises RecordError for an invalid record and BuildBusy when
    another build holds `work_dir`."""
    rec = as_record(record)
    work = Path(work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    ctx = Context(rec, work, reviewer=reviewer,
                  reviewer_name=reviewer_name or ("custom" if reviewer else "none"),
                  review_timeout_s=review_timeout_s)
    result = BuildResult(rec.id, work)
    code = _code_digest()
    with _locked(work):
        _check_targets(work)
        _clean_leftovers(work)
        for stage in STAGES:
            target = work / stage.name
            digest = canonical_digest([stage.name, code, stage.inputs(ctx)])
            gate = read_gate(target)
            if not force and gate and gate.get("passed") and gate.get("input_digest") == digest \
                    and gate.get("output_digest") == tree_digest(target):
                ctx.gates[stage.name] = gate
                result.stages.append(StageOutcome(stage.name, False, True, []))
                continue
            tmp = work / f".tmp-{stage.name}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir()
            _mark(tmp, stage.name)
            try:
                findings = stage.run(ctx, tmp)
            except Exception as exc:  # noqa: BLE001 - a failed stage is a failed gate
                findings = [Finding(stage.name, stage.name,
                                    f"stage crashed: {type(exc).__name__}: {str(exc)[:300]}")]
            gate = {"stage": stage.name, "record": rec.id, "input_digest": digest,
                    "passed": not findings, "findings": _as_dicts(findings),
                    "output_digest": tree_digest(tmp)}
            _write_json_atomic(tmp / GATE, gate)  # last: a folder with a gate is complete
            _swap_in(tmp, target)
            ctx.gates[stage.name] = gate
            result.stages.append(StageOutcome(stage.name, True, gate["passed"],
                                              gate["findings"]))
            if findings:
                break
    return result
