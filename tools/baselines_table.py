"""The README's baselines table, measured by running the baselines.

Each row of the table is one or more ordinary `discoverygym run` commands (the suite's
headline scripted baselines on their default plan, or the setup the row names), played
in a fresh process as a user would; the figure of the row is computed from the records
those runs wrote. tpbench's row is `discoverygym tpbench check --strict`. With --write
the table goes into docs/validity.md between the `baselines` markers, headed by this command;
the "published" column is the one thing not measured here (the figures of the papers the
suites reproduce, cited in each suite's README).

    python tools/baselines_table.py --write                 # everything: tens of minutes
    python tools/baselines_table.py --runs runs/baselines   # keep the runs; a rerun resumes

Usage: python tools/baselines_table.py [--write] [--runs DIR] [--workers N] [--only ROW,...]"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from discoverygym.core.escape import for_markdown  # noqa: E402
from discoverygym.report.markers import write_block  # noqa: E402

MARKER = "baselines"
COMMAND = "python tools/baselines_table.py --write"
TIERS = ("easy", "medium", "hard", "real")

Records = list[dict]


@dataclass(frozen=True)
class Row:
    """One row: a label, the baseline column, the runs it needs (name -> `discoverygym
    run` arguments) and how its result cell is computed from their records."""

    key: str
    label: str
    baseline: str
    runs: dict[str, list[str]]
    result: Callable[[dict[str, Records]], str]
    published: str = ""


def _passed(records: Records) -> tuple[int, int]:
    return sum(1 for r in records if r.get("passed") is True), len(records)


def _fraction(records: Records) -> str:
    k, n = _passed(records)
    return f"{k}/{n} = {100 * k / n:.1f} %" if n and k != n else f"{k}/{n}"


def _percent(k: int, n: int) -> str:
    if not n:
        return "-"
    share = 100 * k / n
    return f"{share:.0f}" if share == round(share) else f"{share:.1f}"


def _tier_rates(records: Records, tiers: tuple[str, ...], mode: str) -> str:
    """Pass rate per tier under the scoring `mode` (each stargazer record scores both)."""
    cells = []
    for tier in tiers:
        chosen = [r for r in records if (r.get("details") or {}).get("tier") == tier]
        passed = sum(1 for r in chosen
                     if ((r.get("details") or {}).get(mode) or {}).get("passed") is True)
        cells.append(_percent(passed, len(chosen)))
    return " / ".join(cells) + " %"


def _metric(records: Records, how: Callable[[list[float]], float]) -> str:
    values = [float(r["value"]) for r in records if isinstance(r.get("value"), (int, float))]
    if len(values) < len(records) or not values:
        return f"{len(records) - len(values)} of {len(records)} episodes without a value"
    return f"{how(values):.3g}"


def _adaptive(runs: dict[str, Records]) -> str:
    records = runs["expert-adaptive"]
    observations = [float(r["usage"]["observations"]) for r in records]
    return (f"{_fraction(records)}, mean {statistics.fmean(observations):.0f} observations, "
            f"max {max(observations):.0f}")


def _packages(runs: dict[str, Records]) -> str:
    records = sorted(runs["baseline"], key=lambda r: r["task_id"])
    scores = [float(r["score"]) for r in records]
    each = ", ".join(f"`{r['task_id']}` {float(r['score']):.3g}" for r in records)
    return f"mean g_clipped {statistics.fmean(scores):.3g} ({each})"


def _mad(agents: tuple[str, ...], world: list[str], how: Callable[[list[float]], float]
         ) -> tuple[dict[str, list[str]], Callable[[dict[str, Records]], str]]:
    runs = {agent: ["mad", *world, "--law", "normal", "--protocol", "paper",
                    "--agent", agent] for agent in agents}
    return runs, lambda got: " / ".join(_metric(got[a], how) for a in agents)


CLASSICAL = ("newtonian", "ballistic", "last-seen")
FLUID = ("navier-stokes", "persistence")
QUANTUM = ("schrodinger", "uniform", "empirical")
_classical_runs, _classical = _mad(CLASSICAL, ["--world", "classical", "--seeds", "0-9"],
                                   statistics.median)
_fluid_runs, _fluid = _mad(FLUID, ["--world", "fluid", "--resolution", "128", "--seeds", "0-2"],
                           statistics.fmean)
_quantum_runs, _quantum = _mad(QUANTUM, ["--world", "quantum", "--seeds", "0-9"],
                               statistics.fmean)

ROWS = (
    Row("gravity-full", "gravity, {n} pairs", "`expert-full`, full-obs",
        {"expert-full": ["gravity", "--agent", "expert-full", "--protocol", "full-obs"]},
        lambda got: _fraction(got["expert-full"]), "100 %"),
    Row("gravity-uniform", "", "`expert-uniform`, budget-obs-100",
        {"expert-uniform": ["gravity", "--agent", "expert-uniform", "--protocol",
                            "budget-obs-100"]},
        lambda got: _fraction(got["expert-uniform"]), "82.5 % (expert reference)"),
    Row("gravity-adaptive", "", "`expert-adaptive`, budget-obs-100",
        {"expert-adaptive": ["gravity", "--agent", "expert-adaptive", "--protocol",
                             "budget-obs-100"]}, _adaptive, "target ≥ 95 %"),
    Row("stargazer-v1", "stargazer, v1 (published rule)", "`classical`, easy / medium / hard",
        {"classical": ["stargazer", "--agent", "classical", "--mode", "v1"]},
        lambda got: _tier_rates(got["classical"], TIERS[:3], "v1"), "95 / 35 / 5 %"),
    Row("stargazer-v2", "stargazer, v2 (strict)", "`classical`, easy / medium / hard / real",
        {"classical": ["stargazer", "--agent", "classical"]},
        lambda got: _tier_rates(got["classical"], TIERS, "v2")),
    Row("mad-classical", "mad classical, normal law, seeds 0-9, `--protocol paper`",
        "`newtonian` / `ballistic` / `last-seen`, median nRMSE", _classical_runs, _classical),
    Row("mad-fluid", "mad fluid, normal, 128², seeds 0-2, `--protocol paper`",
        "`navier-stokes` / `persistence`, mean relative L2", _fluid_runs, _fluid),
    Row("mad-quantum", "mad quantum, normal, seeds 0-9, `--protocol paper`",
        "`schrodinger` / `uniform` / `empirical`, mean L2", _quantum_runs, _quantum),
    Row("packages", "packages, {n} packages", "`baseline`, against a frozen independent SOTA",
        {"baseline": ["packages", "--agent", "baseline"]}, _packages),
)
TPBENCH = ("tpbench, {n} problems",
           "reference answers / planted wrong answers (`tpbench check --strict`)")


def _environment() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="120")
    env.pop("DISCOVERYGYM_PLUGINS", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def play(row: Row, runs_dir: Path, workers: int) -> dict[str, Records]:
    """Run (or resume) the row's runs; their records by run name."""
    got: dict[str, Records] = {}
    for name, args in row.runs.items():
        out = runs_dir / f"{row.key}-{name}"
        command = ["discoverygym", "run", *args, "--workers", str(workers), "--quiet",
                   "--out", str(out), *(["--resume"] if out.exists() else [])]
        done = subprocess.run(command, cwd=runs_dir, env=_environment(), capture_output=True,
                              text=True, stdin=subprocess.DEVNULL)
        records_path = out / "records.jsonl"
        if done.returncode != 0 and not records_path.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["?"]
            raise SystemExit(f"error: {' '.join(command)} failed: {tail[0][:300]}")
        got[name] = [json.loads(line) for line in records_path.read_text().splitlines()
                     if line.strip()]
    return got


def tpbench_cell(runs_dir: Path, workers: int) -> tuple[int, str]:
    """tpbench's row from `tpbench check --strict` (its report kept in the runs folder,
    and reused from there, like a run)."""
    kept = runs_dir / "tpbench-check.json"
    if kept.exists():
        text = kept.read_text()
    else:
        text = subprocess.run(["discoverygym", "tpbench", "check", "--strict", "--json",
                               "--workers", str(workers)], cwd=runs_dir, env=_environment(),
                              capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    try:
        report = json.loads(text)
        totals = report["totals"]
        kept.write_text(text)
    except (ValueError, KeyError) as exc:
        raise SystemExit(f"error: tpbench check --strict gave no report: {exc}") from exc
    return report["n_files"], (f"{totals['reference_correct']}/{report['n_files']} correct / "
                               f"{totals['wrong_rejected']} of {totals['wrong_answers']} "
                               f"rejected")


def table(cells: dict[str, tuple[str, str, str, str]]) -> str:
    """The markdown block: the command, then one line per row (label, baseline, result,
    published); every cell escaped for markdown, code spans kept."""
    lines = [f"`{COMMAND}`", "", "| suite | baseline | result | published |", "|---|---|---|---|"]
    for label, baseline, result, published in cells.values():
        lines.append("| " + " | ".join(_cell(c) for c in (label, baseline, result, published))
                     + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Escape a cell for markdown, keeping our own `code` spans as code."""
    parts = text.split("`")
    return "".join(f"`{part}`" if i % 2 else for_markdown(part, 1000)
                   for i, part in enumerate(parts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table into docs/validity.md")
    parser.add_argument("--readme", type=Path, default=ROOT / "docs" / "validity.md")
    parser.add_argument("--runs", type=Path, default=None,
                        help="keep the run directories here (a rerun resumes them)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=None,
                        help="play only these rows (comma separated keys; not with --write)")
    args = parser.parse_args(argv)
    keys = [row.key for row in ROWS] + ["tpbench"]
    only = set(args.only.split(",")) if args.only else set(keys)
    if only - set(keys) or (args.write and args.only):
        parser.error(f"--only takes rows among {', '.join(keys)}, and --write needs them all")
    runs_dir = args.runs or Path(tempfile.mkdtemp(prefix="baselines-"))
    runs_dir = runs_dir.resolve()
    runs_dir.mkdir(parents=True, exist_ok=True)
    try:
        cells: dict[str, tuple[str, str, str, str]] = {}
        for row in ROWS:
            if row.key == "packages" and "tpbench" in only:
                n, result = tpbench_cell(runs_dir, args.workers)
                cells["tpbench"] = (TPBENCH[0].format(n=n), TPBENCH[1], result, "")
            if row.key not in only:
                continue
            got = play(row, runs_dir, args.workers)
            n = len(next(iter(got.values())))
            cells[row.key] = (row.label.format(n=n), row.baseline, row.result(got),
                              row.published)
            print(f"{row.key}: {cells[row.key][2]}", file=sys.stderr, flush=True)
    finally:
        if args.runs is None:
            shutil.rmtree(runs_dir, ignore_errors=True)
    text = table(cells)
    print(text)
    if args.write:
        write_block(args.readme, MARKER, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
