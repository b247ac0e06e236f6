"""The audit's attacks on NatureGym's release check and its build driver (issue #38 items
4 and 7), declared here beside what they attack (release.py, build.py, record.py; see
core.audit_registry): platform families (audit.PLATFORM_ATTACK_MODULES), played by
`discoverygym audit packages`, the suite that plays what NatureGym makes.

- release: a release checked against a commitment published for another key; a
  public-seed release checked as if a key had made it; a package removed from both
  folder and manifest; an empty folder added inside a package; a file added beside
  the packages. Expected: each refused with its reason.
- build: a record path that is a FIFO (before: the build waited forever for a writer);
  a folder of the user's inside --work named like a stage, `.tmp-*` or `.old-*`
  (before: removed, exit 0). Expected: the FIFO refused at once, every user folder
  intact."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

#: the family whose packages are the quickest to generate
RELEASE_FAMILY = "gravity-force-law"
#: how long a record read may take before the audit calls it a hang
FIFO_WAIT_S = 5.0


# ---- release ---------------------------------------------------------------------------
def _refused(check: Callable[[], Any], reason: str) -> tuple[bool, str]:
    """Run a release check that must be refused with `reason` in its message."""
    from .release import ReleaseMismatch

    try:
        check()
    except ReleaseMismatch as exc:
        return reason in str(exc), f"refused: {str(exc)[:140]}"
    return False, "accepted"


def release_attacks(target: AuditTarget, *, verify: Callable[..., Any] | None = None
                    ) -> list[Outcome]:
    """Five forged releases, each through `verify` (default: release.verify_release, the
    function behind `package verify-release`)."""
    from ..core.keys import new_key
    from .generate import MANIFEST, generate, public_key
    from .release import verify_release

    verify = verify or verify_release
    base = Path(tempfile.mkdtemp(prefix="dg-audit-release-"))
    try:
        key, published = new_key(), new_key()
        keyed, public = base / "keyed", base / "public"
        generate(RELEASE_FAMILY, 1, keyed, key)
        generate(RELEASE_FAMILY, 1, public, public_key(0), mode="public", seed=0)
        pid = json.loads((keyed / MANIFEST).read_text())["packages"][0]["id"]

        def copy(name: str) -> Path:
            out = base / name
            shutil.copytree(keyed, out, symlinks=True)
            return out

        def removed() -> None:
            release = copy("removed")
            data = json.loads((release / MANIFEST).read_text())
            data["packages"] = []
            shutil.rmtree(release / pid)
            (release / MANIFEST).write_text(json.dumps(data))
            verify(release, key)

        def empty_folder() -> None:
            release = copy("empty-folder")
            (release / pid / "problem" / "notes").mkdir()
            verify(release, key)

        def extra_file() -> None:
            release = copy("extra-file")
            (release / "NOTES.txt").write_text("not part of the release")
            verify(release, key)

        attacks = [
            ("a release made with another key than the published commitment's",
             lambda: verify(keyed, key, published.commitment), "commitment"),
            ("a public-seed release checked as keyed", lambda: verify(public, key),
             "public-seed"),
            ("a package removed from folder and manifest", removed, "count"),
            ("an empty folder added inside a package", empty_folder, "empty folder"),
            ("a file added beside the packages", extra_file, "NOTES.txt"),
        ]
        return [guard("release", attack, "refused with its reason",
                      lambda check=check, reason=reason: _refused(check, reason))
                for attack, check, reason in attacks]
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---- build -----------------------------------------------------------------------------
#: A record that the intake gate stops (its SOTA gives no number): the driver still
#: writes and swaps in the intake stage's folder, so a stage-named folder of the user's
#: is at stake, and nothing slow runs.
def _record() -> dict[str, Any]:
    prov = {"label": "audit", "method": "m", "run_by": "audit", "date": "2026-01-01",
            "command": "audit"}
    prose = {k: "audit" for k in ("heading", "problem", "objective", "dataset", "metrics",
                                  "output_format", "submission")}
    return {
        "schema": "naturegym-record/1", "id": "audit-build", "title": "audit",
        "domain": {"primary_domain": "statistics", "sub_domain": "audit", "domain_tags": []},
        "package": {"workflow_topology": "strict_single_step",
                    "methodology_paradigm": "parameter_inference",
                    "tooling_metadata": {"languages": ["python"]},
                    "compute_resource_requirements": {"cpu": 1, "gpu": 0, "runtime": "1 min"},
                    "requirements": ["numpy"], "license": "audit\n"},
        "A": {"name": "a method", "aliases": [], "identifiers": [], "outputs": []},
        "D": {"instances": [{"name": "one", "split": "evaluation"}],
              "prepare": "audit_no_such_module:prepare", "prepare_args": {},
              "hidden": {"one": {"mu": 0.5}}},
        "M": {"name": "absolute_error", "function": "json_absolute_error",
              "direction": "lower_is_better", "output": {"file": "answer.json", "key": "mu"},
              "unit": "", "source_description": "|error|"},
        "S": {"one": {"value": "n/a", "method": "m", "provenance": prov}},
        "B": {},
        "prose": {**prose, "data_description": "# Data\n"},
        "source": {"title": "audit", "text": "audit"},
    }


def _read_fifo(load: Callable[[Path], Any], fifo: Path) -> tuple[bool, str]:
    """`load(fifo)` in a thread; a read still waiting after FIFO_WAIT_S is a hang (the
    audit then opens the FIFO's other end, so the thread ends)."""
    outcome: dict[str, str] = {}

    def read() -> None:
        try:
            load(fifo)
            outcome["said"] = "read as a record"
        except Exception as exc:  # noqa: BLE001 - what was said is the observation
            outcome["said"] = f"refused: {str(exc)[:120]}"
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(FIFO_WAIT_S)
    if thread.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # a reader waits: this opens
        os.close(fd)
        thread.join(FIFO_WAIT_S)
        return False, f"waited {FIFO_WAIT_S:.0f} s for a writer (a hang)"
    said = outcome.get("said", "")
    return said.startswith("refused") and "FIFO" in said, said


def build_attacks(target: AuditTarget, *, load: Callable[[Path], Any] | None = None,
                  run_build: Callable[..., Any] | None = None) -> list[Outcome]:
    """The FIFO record and the user's folders in --work, through `load` (default:
    record.load_record, what `package build RECORD` reads with) and `run_build`
    (default: build.build)."""
    from .build import build
    from .record import as_record, load_record

    load, run_build = load or load_record, run_build or build
    base = Path(tempfile.mkdtemp(prefix="dg-audit-build-"))
    try:
        fifo = base / "record.json"
        os.mkfifo(fifo)

        def users_folders() -> tuple[bool, str]:
            work = base / "work"
            mine = [work / name for name in ("intake", ".tmp-notes", ".old-photos")]
            for folder in mine:
                folder.mkdir(parents=True)
                (folder / "mine.txt").write_text("the user's")
            try:
                run_build(as_record(_record(), base_dir=base), work)
                said = "the build ran"
            except Exception as exc:  # noqa: BLE001 - a refusal is the expected outcome
                said = f"refused: {str(exc).split(';')[0][:100]}"
            lost = [f.name for f in mine if not (f / "mine.txt").is_file()]
            return not lost, f"{said}; lost: {', '.join(lost) or 'nothing'}"

        return [
            guard("build", "a record path that is a FIFO", "refused at once, in one line",
                  lambda: _read_fifo(load, fifo)),
            guard("build", "the user's folders in --work named like a stage, .tmp-*, .old-*",
                  "left as they are", users_folders),
        ]
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _platform_audit(target: AuditTarget) -> bool:
    """Played once, by `audit packages` (the tools attacked make that suite's packages),
    and not when the audit is narrowed to a package of the user's (--package): these
    attack the platform's tools, not a package."""
    return target.suite.name == "packages" and target.scope.get("package") is None


ATTACKS = (
    AttackFamily("release", "verify-release against a commitment published for another "
                 "key, a public-seed release checked as keyed, a package removed from "
                 "folder and manifest, an added empty folder or file", release_attacks,
                 applies=_platform_audit),
    AttackFamily("build", "package build given a FIFO as its record, and --work holding "
                 "the user's folders named like a stage, .tmp-* or .old-*", build_attacks,
                 applies=_platform_audit),
)
