"""Calibration of generated packages: generate N packages per family, run
`discoverygym calibrate packages --packages DIR` on them, and judge the figures the
issue asks for (every package valid; truth-as-output g >= 0 on all; trivial agents
g <= -0.5 on all; baseline g <= -0.5 on at least 90 %; bound g > 0.1 on at least
80 %), and run the family's validity gates (gates.py: leak, bound by playing the
oracle, zero, no-science). The bound is the oracle's score at generation on the same
instance; its g comes from the package's metadata. `write_readme_block` puts the table
between markers in a README, so the figures there come from this command."""

from __future__ import annotations

import json
import re
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .format.package import find_packages

BEGIN = "<!-- naturegym:calibration:begin -->"
END = "<!-- naturegym:calibration:end -->"
REQUIREMENTS = {"baseline_share": 0.9, "bound_share": 0.8}


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    path = run_dir / "records.jsonl"
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                out[record["task_id"]] = record
    return out


def _bound_g(root: Path) -> float:
    """The package's bound g over its evaluation instances (mean, as the task score)."""
    meta = json.loads((root / "metadata.json").read_text())
    values = [e["metrics"][0]["reference_g"]["bound"] for e in meta["performance_entries"]
              if e.get("split") == "evaluation"]
    return statistics.fmean(values)


def family_figures(packages_dir: Path, runs_dir: Path, verdicts: dict[str, str]
                   ) -> dict[str, Any]:
    """The issue's figures for one family's calibrated folder."""
    roots = find_packages(packages_dir)
    by_agent = {agent: _records(runs_dir / agent)
                for agent in ("oracle", "baseline", "empty-outputs", "constant")}

    def g(agent: str, task: str) -> float:
        record = by_agent[agent].get(task) or {}
        value = record.get("value")
        return float(value) if isinstance(value, int | float) else -1.0

    tasks = [r.name for r in roots]
    n = len(tasks)
    return {
        "packages": n,
        "valid": sum(verdicts.get(t) == "valid" for t in tasks),
        "truth_g_ge_0": sum(g("oracle", t) >= 0 for t in tasks),
        "trivial_g_le_-0.5": sum(all(g(a, t) <= -0.5 for a in ("empty-outputs", "constant"))
                                 for t in tasks),
        "baseline_g_le_-0.5": sum(g("baseline", t) <= -0.5 for t in tasks),
        "bound_g_gt_0.1": sum(_bound_g(r) > 0.1 for r in roots),
        "median_baseline_g": statistics.median(g("baseline", t) for t in tasks),
        "median_bound_g": statistics.median(_bound_g(r) for r in roots),
    }


def passes(f: dict[str, Any]) -> bool:
    n = f["packages"]
    gates = f.get("gates", {})
    return (f["valid"] == n and f["truth_g_ge_0"] == n and f["trivial_g_le_-0.5"] == n
            and f["baseline_g_le_-0.5"] >= REQUIREMENTS["baseline_share"] * n
            and f["bound_g_gt_0.1"] >= REQUIREMENTS["bound_share"] * n
            and all(g.get("passed") for g in gates.values()))


def _gate_cell(f: dict[str, Any], gate: str) -> str:
    result = f.get("gates", {}).get(gate)
    if result is None:
        return "-"
    return f"{'pass' if result['passed'] else 'FAIL'}: {escape_cell(result['figure'])}"


def escape_cell(text: str) -> str:
    """A table cell's text, escaped (it may quote a family's finding)."""
    from ..core.escape import for_markdown

    return for_markdown(text)


def markdown(figures: dict[str, dict[str, Any]], command: str) -> str:
    from .gates import GATES

    lines = [f"`{command}`", "",
             "| family | domain | packages | valid | truth g >= 0 | trivial g <= -0.5 | "
             "baseline g <= -0.5 | bound g > 0.1 | median baseline g | median bound g | "
             + " | ".join(f"{gate} gate" for gate in GATES) + " | "
             "generation (s) | generation CPU (s) | meets the bar |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
             + "---|" * len(GATES) + "---:|---:|---|"]
    for name, f in figures.items():
        lines.append(
            f"| {name} | {escape_cell(f.get('domain', '-'))} | {f['packages']} | "
            f"{f['valid']} | {f['truth_g_ge_0']} | "
            f"{f['trivial_g_le_-0.5']} | {f['baseline_g_le_-0.5']} | {f['bound_g_gt_0.1']} | "
            f"{f['median_baseline_g']:.3g} | {f['median_bound_g']:.3g} | "
            + "".join(f"{_gate_cell(f, gate)} | " for gate in GATES)
            + f"{f['generation_s']:.0f} | {f.get('generation_cpu_s', float('nan')):.0f} | "
            f"{'yes' if passes(f) else 'NO'} |")
    findings = [f"- {name}, {gate} gate: {escape_cell(text)}"
                for name, f in figures.items()
                for gate, result in f.get("gates", {}).items()
                for text in result.get("findings", [])[:3]]
    if findings:
        lines += ["", "Findings:", "", *findings]
    return "\n".join(lines) + "\n"


def write_readme_block(readme: Path, block: str) -> None:
    """Replace the text between the calibration markers of `readme` (which must hold
    them) with `block`."""
    text = readme.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no {BEGIN} ... {END} markers")
    readme.write_text(pattern.sub(lambda _m: f"{BEGIN}\n{block}{END}", text, count=1))


def readme_block(readme: Path) -> str:
    """The text between the calibration markers of `readme`."""
    match = re.search(re.escape(BEGIN) + "\n?(.*?)" + re.escape(END), readme.read_text(), re.S)
    if match is None:
        raise ValueError(f"{readme} has no {BEGIN} ... {END} markers")
    return match.group(1)


RERUN_TITLE = "Rows rewritten since by a run of fewer families:"


def _block_parts(block: str) -> tuple[str, list[str], list[str], list[str]]:
    """A block as `markdown` (and `merge_block`) write it: its command line, its table
    lines (header and rows), its findings and its rerun notes."""
    lines = block.splitlines()
    command = lines[0] if lines else ""
    table = [line for line in lines if line.startswith("|")]
    findings: list[str] = []
    reruns: list[str] = []
    target = None
    for line in lines:
        if line == "Findings:":
            target = findings
        elif line == RERUN_TITLE:
            target = reruns
        elif target is not None and line.startswith("- "):
            target.append(line)
    return command, table, findings, reruns


def _row_family(line: str) -> str:
    return line.strip("|").split("|")[0].strip()


def merge_block(old: str, new: str, families: list[str]) -> str:
    """The calibration table `old` with the rows (and findings) of `families` taken
    from `new`, the block of a run of only those families; every other row stays as it
    was, and a note names the command that wrote the replaced rows. A family without a
    row in `old` is added at the end."""
    old_command, old_table, old_findings, old_reruns = _block_parts(old)
    new_command, new_table, new_findings, _ = _block_parts(new)
    if len(old_table) < 2:  # no table yet: the new block is the table
        return new
    new_rows = {_row_family(line): line for line in new_table[2:]}
    chosen = [f for f in families if f in new_rows]
    rows = [new_rows[_row_family(line)] if _row_family(line) in chosen else line
            for line in old_table[2:]]
    rows += [new_rows[f] for f in chosen if f not in {_row_family(r) for r in old_table[2:]}]

    def about(line: str, names: list[str]) -> bool:
        return any(line.startswith(f"- {name}, ") or line.startswith(f"- {name}: ")
                   for name in names)

    findings = [x for x in old_findings if not about(x, chosen)] + [
        x for x in new_findings if about(x, chosen)]
    reruns = [x for x in old_reruns if not about(x, chosen)] + [
        f"- {name}: {new_command}" for name in chosen]
    lines = [old_command, "", *old_table[:2], *rows]
    if findings:
        lines += ["", "Findings:", "", *findings]
    lines += ["", RERUN_TITLE, "", *reruns]
    return "\n".join(lines) + "\n"


def merge_readme_rows(readme: Path, block: str, families: list[str]) -> None:
    """Write the rows of `families` from `block` into the calibration table of `readme`,
    keeping the other families' rows (`merge_block`)."""
    write_readme_block(readme, merge_block(readme_block(readme), block, families))


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the build's prepare and
    evaluator processes run as children)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def family_gates(name: str, packages_dir: Path, generated: list[Any], seed: int,
                 leak_draws: int) -> dict[str, dict[str, Any]]:
    """The four gates of gates.py on one family's freshly generated packages (`generated`:
    generate's GeneratedPackage objects, which keep the draws)."""
    from .families import get_family
    from .gates import bound_gate, leak_result, no_science_gate, zero_gate
    from .generate import public_key
    from .leak_gate import run_leak_gate

    family = get_family(name)
    tried = [s for p in generated for a in p.accepted for s in a.tried]
    roots = [packages_dir / p.id for p in generated]
    zero_inputs = [(packages_dir / p.id, {a.name: a.draw.outputs["sota"]
                                          for a in p.accepted}) for p in generated]
    results = [leak_result(run_leak_gate(family, public_key(seed), leak_draws)),
               bound_gate(tried, family.metric.direction), zero_gate(zero_inputs),
               no_science_gate(family, roots)]
    return {r.gate: r.as_dict() for r in results}


def calibrate_families(families: list[str], count: int, seed: int, work_dir: Path, *,
                       calibrate: Callable[..., Any], workers: int = 2,
                       log: Any = print, leak_draws: int | None = None
                       ) -> dict[str, dict[str, Any]]:
    """Generate `count` public packages per family under work_dir/<family>, run the
    family's gates on them (gates.json, kept with the packages), calibrate them, and
    return the figures per family (with the generation time).

    `calibrate` is the runner's `discoverygym.calibrate.calibrate`, handed in by the
    command line that mounts this suite's commands: a suite never imports the runner."""
    from .families import get_family
    from .generate import generate, public_key
    from .leak_gate import MIN_DRAWS

    out = {}
    for name in families:
        packages = work_dir / name / "packages"
        timing = work_dir / name / "generation.json"
        gates_file = work_dir / name / "gates.json"
        if not (packages / "release.json").is_file() or not gates_file.is_file():
            shutil.rmtree(packages, ignore_errors=True)  # the gates need the draws
            started, cpu_started = time.perf_counter(), _cpu_s()
            generated: list[Any] = []
            generate(name, count, packages, public_key(seed), mode="public", seed=seed,
                     progress=generated.append)
            timing.write_text(json.dumps({"generation_s": time.perf_counter() - started,
                                          "generation_cpu_s": _cpu_s() - cpu_started}))
            gates = family_gates(name, packages, generated, seed, leak_draws or MIN_DRAWS)
            gates_file.write_text(json.dumps(gates, indent=1, sort_keys=True,
                                             default=str) + "\n")
            for gate, result in gates.items():
                log(f"{name}: {gate} gate {'passed' if result['passed'] else 'FAILED'}: "
                    f"{result['figure']}" + "".join(f"; {x}" for x in result["findings"][:3]))
        # a rerun reuses the packages, and reports the time their generation took
        timings = json.loads(timing.read_text()) if timing.is_file() else {}
        elapsed = float(timings.get("generation_s", float("nan")))
        cpu = float(timings.get("generation_cpu_s", float("nan")))
        log(f"{name}: {count} packages generated in {elapsed:.0f} s ({cpu:.0f} s CPU)")
        result = calibrate("packages", seeds=[0], raw_options={"packages": str(packages)},
                           runs_dir=work_dir / name / "runs", workers=workers, resume=True)
        verdicts = {t.task_id: t.verdict for t in result.tasks}
        figures = family_figures(packages, work_dir / name / "runs", verdicts)
        figures["generation_s"] = elapsed
        figures["generation_cpu_s"] = cpu
        figures["domain"] = get_family(name).domain
        figures["gates"] = json.loads(gates_file.read_text())
        log(f"{name}: {figures}")
        out[name] = figures
    return out
