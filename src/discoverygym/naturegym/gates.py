"""The validity gates of a NatureGym family, run by `package calibrate-generated` on
every family (issue #34). What each proves:

- leak gate (leak_gate.py): no hidden value is derivable from the scaffolding of what
  the agent is given, over >= 200 public draws.
- bound gate: the bound is what the oracle (the true model and parameters, without the
  noise) scores, its outputs played through the family's evaluator; on at least 80 % of
  the draws generation tried (before the redraw rule keeps any), the oracle beats the
  SOTA by g >= 0.2. A family whose "bound" no method could approach fails here.
- zero gate: the frozen SOTA's own outputs, played through each sealed package's
  evaluator (in its own process, as an agent's are), score g = 0 exactly against the
  SOTA value the package records: the recorded value is the SOTA's, at full precision.
- no-science gate: each no-science predictor that applies (the family's
  `no_science_outputs`: constant, training mean, persistence, nearest neighbour, ...,
  and the generic copy-the-development-answer), played through each package's
  evaluator, stays at g < 0 on at least 95 % of the evaluation instances.

Every gate gives a GateResult: passed, the figure the table shows, and its findings."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .families.base import Family
from .format.evaluator_runner import run_evaluator
from .format.package import load_package
from .format.scoring import instance_g

BOUND_G_MIN = 0.2
BOUND_SHARE = 0.8
NO_SCIENCE_SHARE = 0.95
COPY_DEVELOPMENT = "copy-development"


@dataclass
class GateResult:
    gate: str
    passed: bool
    figure: str  # what the calibration table shows
    findings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def bound_gate(tried: list[dict[str, float]], direction: str) -> GateResult:
    """The oracle's g on every draw tried (scores of each role, the bound the oracle's)."""
    gs = [instance_g(s["bound"], s["sota"], direction) for s in tried
          if s.get("sota") not in (None, 0.0)]
    share = sum(g >= BOUND_G_MIN for g in gs) / len(gs) if gs else 0.0
    passed = bool(gs) and share >= BOUND_SHARE
    findings = [] if passed else [
        f"the oracle reaches g >= {BOUND_G_MIN} on {share:.0%} of {len(gs)} draws "
        f"(needs {BOUND_SHARE:.0%})"]
    return GateResult("bound", passed, f"{share:.0%} of {len(gs)}", findings,
                      {"share": share, "draws": len(gs),
                       "median_g": sorted(gs)[len(gs) // 2] if gs else None})


def _write(folder: Path, outputs: dict[str, dict[str, bytes]]) -> None:
    for instance, files in outputs.items():
        (folder / instance).mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (folder / instance / name).write_bytes(content)


def _evaluation_names(root: Path) -> list[str]:
    return [i.name for i in load_package(root).instances if i.split == "evaluation"]


def zero_gate(packages: list[tuple[Path, dict[str, dict[str, bytes]]]]) -> GateResult:
    """(sealed package folder, {instance: the SOTA's output files}) per package."""
    exact = total = 0
    findings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="naturegym-zero-") as scratch:
        for k, (root, sota_outputs) in enumerate(packages):
            folder = Path(scratch) / str(k)
            _write(folder, sota_outputs)
            result = run_evaluator(load_package(root), folder)
            if not result.ok:
                findings.append(f"{root.name}: {result.error}")
                continue
            for name in sota_outputs:
                total += 1
                g = result.g.get(name)
                if g == 0.0:
                    exact += 1
                else:
                    findings.append(f"{root.name}/{name}: the SOTA's own outputs score "
                                    f"g = {g!r}")
    passed = total > 0 and exact == total and not findings
    return GateResult("zero", passed, f"{exact} of {total}", findings[:5],
                      {"exact": exact, "instances": total})


def no_science_outputs(family: Family, root: Path) -> dict[str, dict[str, dict[str, bytes]]]:
    """predictor -> {evaluation instance: its output files}, for one sealed package:
    the family's no-science predictors run on each instance's data, and the copy of the
    development instance's truth (which `evaluate` shows the agent) for each."""
    data = root / "problem" / "data"
    names = _evaluation_names(root)
    development = [i.name for i in load_package(root).instances if i.split == "development"]
    out: dict[str, dict[str, dict[str, bytes]]] = {}
    for name in names:
        for predictor, files in family.no_science_outputs(data / name).items():
            out.setdefault(predictor, {})[name] = files
    if development:
        truth = root / "evaluation" / "ground_truth" / development[0]
        copied = {p.name: p.read_bytes() for p in sorted(truth.iterdir()) if p.is_file()}
        out[COPY_DEVELOPMENT] = {name: copied for name in names}
    return out


def no_science_gate(family: Family, roots: list[Path]) -> GateResult:
    """Each predictor's g on every evaluation instance of the sealed packages."""
    below: dict[str, list[bool]] = {}
    worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="naturegym-noscience-") as scratch:
        for root in roots:
            for predictor, outputs in no_science_outputs(family, root).items():
                folder = Path(scratch) / predictor
                shutil.rmtree(folder, ignore_errors=True)
                _write(folder, outputs)
                result = run_evaluator(load_package(root), folder)
                for name in outputs:
                    g = result.g.get(name, -1.0) if result.ok else -1.0
                    below.setdefault(predictor, []).append(g < 0.0)
                    worst[predictor] = max(worst.get(predictor, -float("inf")), g)
    shares = {p: sum(v) / len(v) for p, v in below.items() if v}
    low = min(shares.values()) if shares else 0.0
    weakest = min(shares, key=shares.get) if shares else "-"
    passed = bool(shares) and low >= NO_SCIENCE_SHARE
    findings = [f"{p} stays at g < 0 on only {v:.0%} of instances (best g {worst[p]:.3g})"
                for p, v in sorted(shares.items()) if v < NO_SCIENCE_SHARE]
    return GateResult("no-science", passed, f"{low:.0%} ({weakest})" if shares else "-",
                      findings, {"shares": shares, "best_g": worst})


def leak_result(report: Any) -> GateResult:
    """A leak_gate.LeakReport as a GateResult."""
    return GateResult("leak", report.passed, f"R2 {report.worst:.2f} / {report.draws} draws",
                      report.findings[:5], report.as_dict())


GATES = ("leak", "bound", "zero", "no-science")
