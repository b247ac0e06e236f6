"""The audit's attacks on task packages (see core.audit_registry): links, FIFOs and
hard links to hidden files in OUTPUT_DIR; a folder swapped for a link while the file
tools run; evaluate feedback that covers scored instances. Declared here, beside the
suite they attack, and returned by `PackagesSuite.audit_attacks`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core import Episode, get_suite
from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard
from ...naturegym.format.package import find_packages, load_package
from .shipped import CATALOG


def audit_roots(scope: dict[str, Any]) -> list[Path]:
    """The packages an audit attacks: the `package` of its scope (a package or a folder
    of packages), else the shipped catalog."""
    package = scope.get("package")
    roots = find_packages(Path(package)) if package else find_packages(CATALOG)
    if not roots:
        raise ValueError(f"No task package in {package}.")
    return roots


_SWAPPER = """
import os, shutil, sys, time
sub, secret = sys.argv[1], sys.argv[2]
plain, link = sub + ".dir", sub + ".link"
os.mkdir(plain)
os.symlink(secret, link)
while True:
    try:
        os.rename(plain, sub); time.sleep(0.0003); os.rename(sub, plain)
        os.rename(link, sub); time.sleep(0.0003); os.rename(sub, link)
    except OSError:
        if os.path.isdir(sub) and not os.path.islink(sub):
            shutil.rmtree(sub, ignore_errors=True)
"""


def package_attacks(package_root: Path, packages_dir: Path | None) -> list[Outcome]:
    """Links, FIFOs and hard links planted in OUTPUT_DIR, a folder swapped for a link
    while the file tools run, and feedback that would name scored instances."""
    package = load_package(package_root)
    options = {"packages": str(packages_dir)} if packages_dir else {}
    suite = get_suite("packages")
    truth_files = sorted(p for p in (package.evaluation_dir / "ground_truth").rglob("*")
                         if p.is_file())
    outcomes = []

    def episode() -> Episode:
        return suite.episode(package.case_id, **options)

    def plant(kind: str) -> Callable[[], tuple[bool, str]]:
        def attack() -> tuple[bool, str]:
            ep = episode()
            out = Path(ep.view().workspace()["OUTPUT_DIR"])
            target = out / (package.instances[0].name) / "planted"
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind == "link":
                target.symlink_to(truth_files[0] if truth_files else package.evaluator)
            elif kind == "fifo":
                os.mkfifo(target)
            else:
                (out / "original").write_text("x")
                os.link(out / "original", target)
            started = time.monotonic()
            result = ep.call("evaluate", {})
            spent = ep.usage.submissions
            record = ep.record(agent="audit")
            findings = [f["check"] for f in record.details["validity"]["findings"]]
            ok = (result.is_error and "refused" in result.text and spent == 0
                  and "unsafe_outputs" in findings)
            return ok, (f"refused={result.is_error}, charged={spent}, "
                        f"finding={'unsafe_outputs' in findings}, "
                        f"{time.monotonic() - started:.1f} s")
        return attack

    for kind, label in (("link", "a symbolic link to the ground truth"),
                        ("fifo", "a FIFO in OUTPUT_DIR"), ("hard", "a hard link")):
        outcomes.append(guard("packages", label, "refused, free, validity finding",
                               plant(kind)))

    def race() -> tuple[bool, str]:
        secret = Path(tempfile.mkdtemp(prefix="dg-audit-secret-"))
        (secret / "answer.json").write_text("AUDIT-SECRET")
        ep = episode()
        out = Path(ep.view().workspace()["OUTPUT_DIR"])
        swapper = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(out / "sub"),
                                    str(secret)])
        leaked = 0
        try:
            while not (out / "sub.link").is_symlink():
                time.sleep(0.01)
            for k in range(300):
                text = ep.call("read_file", {"path": "output:sub/answer.json"}).text
                ep.call("write_file", {"path": f"sub/p{k}.txt", "content": "x"})
                leaked += "AUDIT-SECRET" in text
        finally:
            swapper.kill()
            swapper.wait()
            ep.record(agent="audit")
        written = len(list(secret.iterdir())) - 1
        shutil.rmtree(secret, ignore_errors=True)
        return leaked == 0 and written == 0, f"{leaked} reads and {written} writes got through"
    outcomes.append(guard("packages", "swap a folder for a link while file tools run",
                           "nothing outside OUTPUT_DIR read or written", race))

    def feedback() -> tuple[bool, str]:
        ep = episode()
        result = ep.call("evaluate", {})
        scored = set(result.data.get("raw_scores", {})) if result.data else set()
        record = ep.record(agent="audit")
        if not package.has_split:
            return False, ("no development/evaluation split: feedback covers the scored "
                           "instances (see `package check --require-split`)")
        leaked = scored & set(package.split_names("evaluation"))
        return not leaked and record.passed is False, (
            f"feedback named {sorted(scored)}; evaluation instances revealed: "
            f"{sorted(leaked) or 'none'}")
    outcomes.append(guard("packages", "probe the truth through evaluate feedback",
                           "feedback on development instances only", feedback))
    return outcomes


def catalog_attacks(target: AuditTarget) -> list[Outcome]:
    """`package_attacks` on every package of the target, each attack named after it."""
    outside = target.scope.get("package") is not None  # a folder given on the command line
    outcomes = []
    for root in audit_roots(dict(target.scope)):
        outcomes += [Outcome(o.family, f"{root.name}: {o.attack}", o.expected, o.observed,
                             o.ok) for o in package_attacks(root, root.parent if outside
                                                            else None)]
    return outcomes


ATTACKS = (
    AttackFamily("packages", "links, FIFOs and hard links to hidden files in OUTPUT_DIR; a "
                 "folder swapped for a link while the file tools run; evaluate feedback "
                 "that covers scored instances", catalog_attacks),
)
