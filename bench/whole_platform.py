"""One figure for the whole platform: every suite's headline scripted baseline over its
default plan, run as a user would after install (`discoverygym run SUITE --agent NAME`
in a fresh process), timed end to end (interpreter start, imports, pool start-up and
the run directory included).

Prints per suite: episodes, wall time, episodes per second, CPU time (the run and every
process it started), peak memory (the run's whole process tree, sampled) and the total.
`--all-roles` runs every calibration role's agent too (`CALIBRATION` in each suite's
baselines). `--json FILE` writes the figures with `total_s`, the machine and its load
average before and after, so a figure is never read without the load it ran under.

    python bench/whole_platform.py --workers 2 --json platform.json
    python bench/whole_platform.py --all-roles --json platform-all.json
    python bench/whole_platform.py --executor ray --address 127.0.0.1:6379
    python bench/whole_platform.py --all-roles --suite-args "mad quantum=--seeds 0"
    python bench/whole_platform.py --against 0f73b85 --workers 2 --json against.json
    python bench/whole_platform.py --keyed --suites gravity,mad --json keyed.json
    python bench/whole_platform.py --write-readme

`--suite-args LABEL=ARGS` adds `discoverygym run` arguments for one suite (a smaller
plan: the table then shows them beside the agent); `--runs-dir DIR` keeps every run's
records there (to compare records before and after a change). `--write-readme`
rewrites every table of README_TABLES between docs/scale.md's
`<!-- whole-platform:NAME:begin -->` and `<!-- whole-platform:NAME:end -->` markers from
its committed JSON files; `--check-readme` exits 1 if one differs.

`--against REV` times git revision REV beside this tree on the same machine in the same
session: REV's `src/` is extracted (`git archive`) to a side folder and run by this
environment's interpreter and libraries (PYTHONPATH first, so the figures compare the
code, not library versions). The two alternate (this, REV, REV, this, ... over
`--rounds`), every run from an empty cache (a fresh `DISCOVERYGYM_CACHE`); it prints
each suite's median wall and CPU seconds on both sides, the ratios REV / this (above 1:
this tree is faster), and how the records differ (passed, score at 1e-9 relative).
`--keyed` runs each suite once unkeyed and once with a fresh key (every draw its own),
both from an empty cache, and prints the ratio keyed / unkeyed.

(Not `bench/platform.py`: a script's folder comes first on `sys.path`, so that name
would hide the standard library's `platform` from every script in bench/.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

import revisions
from discoverygym.report.markers import replace_block

# (label, suite, suite options, headline agent): the README's baselines table.
HEADLINE = [
    ("gravity", "gravity", [], "expert-adaptive"),
    ("stargazer", "stargazer", [], "classical"),
    ("mad classical", "mad", [], "newtonian"),
    ("mad fluid", "mad", ["--world", "fluid"], "navier-stokes"),
    ("mad quantum", "mad", ["--world", "quantum"], "schrodinger"),
    ("tpbench", "tpbench", [], "reference"),
    ("packages", "packages", [], "baseline"),
]
ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "docs" / "scale.md"
# README table name -> the committed --json files it is rendered from (several: side by side)
README_TABLES = {
    "headline-w2": ["bench/results/whole_platform_headline_w2.json"],
    "headline-w1": ["bench/results/whole_platform_headline_w1.json"],
    "quantum-w2": ["bench/results/whole_platform_quantum_w2.json"],
    "quantum-grouping": ["bench/results/whole_platform_quantum_grouping_before.json",
                         "bench/results/whole_platform_quantum_grouping_after.json"],
    "all-roles": ["bench/results/whole_platform_all_roles_w2.json"],
    "keyed": ["bench/results/whole_platform_keyed_w2.json"],
    "against-0f73b85": ["bench/results/whole_platform_against_0f73b85_w2.json"],
    "scale": ["bench/results/whole_platform_scale_w1.json",
              "bench/results/whole_platform_scale_w2.json",
              "bench/results/whole_platform_scale_ray2.json"],
}
SAMPLE_S = 0.2
RUN_TIMEOUT_S = 3600


@dataclass
class Figure:
    label: str
    agent: str
    command: str
    episodes: int = 0
    wall_s: float = 0.0
    episodes_per_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0
    exit_status: int = 0
    passed: int = 0
    error: str | None = None
    roles: list[str] = field(default_factory=list)
    plan_args: list[str] = field(default_factory=list)  # from --suite-args: a smaller plan


def calibration_roles(suite: str) -> dict[str, list[str]]:
    """agent -> the calibration roles it plays for `suite`."""
    from discoverygym.core import calibration_table

    out: dict[str, list[str]] = {}
    for role, agents in (calibration_table(suite) or {}).items():
        for agent in agents:
            out.setdefault(agent, []).append(role)
    return out


def runs(all_roles: bool) -> list[tuple[str, str, list[str], str, list[str]]]:
    """(label, suite, options, agent, roles) to run: the headline ones, and with
    `all_roles` every other calibration agent of each suite (per mad world)."""
    out = [(label, suite, opts, agent, ["headline"]) for label, suite, opts, agent in HEADLINE]
    if not all_roles:
        return out
    for label, suite, opts, headline_agent in HEADLINE:
        for agent, roles in calibration_roles(suite).items():
            if agent != headline_agent:
                out.append((label, suite, opts, agent, roles))
    return out


class TreeSampler:
    """Peak resident memory of a process and all its descendants, summed, sampled every
    SAMPLE_S seconds (a pool's workers count; a short spike between samples may not)."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for proc in procs:
                try:
                    total += proc.memory_info().rss
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            self.peak_bytes = max(self.peak_bytes, total)
            self._stop.wait(SAMPLE_S)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_dir(scratch: Path, suite: str, options: list[str], agent: str, tag: str = "") -> Path:
    return scratch / (f"{suite}-{'-'.join(o.lstrip('-') for o in options) or 'default'}-"
                      f"{agent}{tag}")


def run_one(label: str, suite: str, options: list[str], agent: str, roles: list[str],
            executor_args: list[str], scratch: Path, env: dict[str, str] | None = None,
            tag: str = "") -> Figure:
    out = run_dir(scratch, suite, options, agent, tag)
    cli = shutil.which("discoverygym") or str(Path(sys.executable).parent / "discoverygym")
    command = [cli, "run", suite, *options, "--agent", agent, *executor_args,
               "--out", str(out), "--quiet"]
    figure = Figure(label=label, agent=agent, roles=roles,
                    command=" ".join(["discoverygym", *command[1:-3]]))
    cpu_before = children_cpu_s()
    start = time.perf_counter()
    # the run's own output is not the benchmark's: it goes to a log beside the records
    log = scratch / f"{out.name}.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})})
        with TreeSampler(proc.pid) as sampler:
            try:
                figure.exit_status = proc.wait(timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                figure.exit_status = proc.wait()
                figure.error = f"timed out after {RUN_TIMEOUT_S} s"
    figure.wall_s = round(time.perf_counter() - start, 2)
    figure.cpu_s = round(children_cpu_s() - cpu_before, 2)
    figure.peak_rss_mb = round(sampler.peak_bytes / 2**20, 1)
    summary = out / "summary.json"
    if summary.exists():
        data = json.loads(summary.read_text())
        figure.episodes = int(data.get("n_episodes", 0))
        figure.passed = int(data.get("n_passed", 0))
    if figure.exit_status != 0 and figure.error is None:
        figure.error = f"exit status {figure.exit_status}: " + log.read_text()[-300:].strip()
    figure.episodes_per_s = round(figure.episodes / figure.wall_s, 3) if figure.wall_s else 0.0
    return figure


def machine() -> dict[str, object]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "cpu_model": model,
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}


def print_table(figures: list[Figure], total_s: float) -> None:
    head = f"{'suite':<15} {'agent':<16} {'episodes':>8} {'wall s':>8} {'ep/s':>7} " \
           f"{'CPU s':>8} {'peak MB':>8}"
    print(head)
    print("-" * len(head))
    for f in figures:
        print(f"{f.label:<15} {f.agent:<16} {f.episodes:>8} {f.wall_s:>8.1f} "
              f"{f.episodes_per_s:>7.2f} {f.cpu_s:>8.1f} {f.peak_rss_mb:>8.0f}"
              + (f"  ERROR {f.error[:60]}" if f.error else ""))
    print("-" * len(head))
    print(f"{'total':<15} {'':<16} {sum(f.episodes for f in figures):>8} {total_s:>8.1f} "
          f"{'':>7} {sum(f.cpu_s for f in figures):>8.1f}", flush=True)


def markdown(result: dict) -> str:
    """The README's table of a `--json` file, with the machine and the load it ran under."""
    m = result["machine"]
    lines = [
        f"{m['cpu_count']} CPUs ({m['cpu_model'] or 'unknown model'}), "
        f"{m['memory_gb']} GB, Python {m['python']}; executor {result['executor']}, "
        f"{result['workers']} workers; load average (1, 5, 15 min) "
        f"{', '.join(map(str, result['loadavg_before']))} before, "
        f"{', '.join(map(str, result['loadavg_after']))} after"
        + ("" if result.get("complete", True) else "; INCOMPLETE (cut short)") + ".",
        "",
        "| suite | agent | episodes | wall s | episodes/s | CPU s | peak MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in result["suites"]:
        error = f" (error: {f['error'][:60]})" if f.get("error") else ""
        plan = f" ({' '.join(f['plan_args'])})" if f.get("plan_args") else ""
        lines.append(f"| {f['label']} | `{f['agent']}`{plan}{error} | {f['episodes']} | "
                     f"{f['wall_s']:.0f} | {f['episodes_per_s']:.2f} | {f['cpu_s']:.0f} | "
                     f"{f['peak_rss_mb']:.0f} |")
    lines.append(f"| **total** | | {sum(f['episodes'] for f in result['suites'])} | "
                 f"**{result['total_s']:.0f}** | | {result['total_cpu_s']:.0f} | |")
    return "\n".join(lines)


def setup(result: dict) -> str:
    where = " cluster (--address)" if result.get("address") else ""
    return f"{result['executor']}{where}, {result['workers']} workers"


def comparison(results: list[dict], names: list[str]) -> str:
    """Wall and CPU seconds per suite, one column per run, headed by its file's name (how
    the figures scale, or what a change did)."""
    lines = ["| suite | agent | episodes | " + " | ".join(
                 f"`{name}`, {setup(r)}: wall s / CPU s (load {r['loadavg_before'][0]})"
                 for r, name in zip(results, names, strict=True)) + " |",
             "|---|---|---|" + "---|" * len(results)]
    for i, f in enumerate(results[0]["suites"]):
        cells = [f"{r['suites'][i]['wall_s']:.0f} / {r['suites'][i]['cpu_s']:.0f}"
                 for r in results]
        lines.append(f"| {f['label']} | `{f['agent']}` | {f['episodes']} | "
                     + " | ".join(cells) + " |")
    lines.append("| **total** | | | " + " | ".join(
        f"**{r['total_s']:.0f}** / {r['total_cpu_s']:.0f}" for r in results) + " |")
    return "\n".join(lines)


def parse_suite_args(values: list[str]) -> dict[str, list[str]]:
    """{label: extra `discoverygym run` arguments} from `LABEL=ARGS` strings."""
    out: dict[str, list[str]] = {}
    for value in values:
        label, sep, extra = value.partition("=")
        if not sep or not label.strip():
            raise ValueError(f"--suite-args wants LABEL=ARGS, e.g. 'mad quantum=--seeds 0'; "
                             f"got {value!r}")
        out.setdefault(label.strip(), []).extend(shlex.split(extra))
    return out


def machine_line(result: dict) -> str:
    m = result["machine"]
    return (f"{m['cpu_count']} CPUs ({m['cpu_model'] or 'unknown model'}), "
            f"{m['memory_gb']} GB, Python {m['python']}; {setup(result)}; load average "
            f"(1, 5, 15 min) {', '.join(map(str, result['loadavg_before']))} before, "
            f"{', '.join(map(str, result['loadavg_after']))} after"
            + ("" if result.get("complete", True) else "; INCOMPLETE (cut short)") + ".")


def _ratio_cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def against_markdown(result: dict) -> str:
    """The table of an `--against` run: medians of both sides, ratios REV / this, and
    how the records differ."""
    rev = result["against"]
    name = f"`{rev['rev']}` ({rev['commit'][:10]})"
    lines = [machine_line(result) + f" {rev['rounds']} round(s) per side, alternating, "
             "each from an empty cache; medians.", "",
             f"| suite | agent | episodes | this tree: wall s / CPU s | {name}: wall s / "
             "CPU s | wall ratio | CPU ratio | records (passed / score differ) |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for f in result["suites"]:
        rec = f["records"]
        records = (f"{rec['matched']} matched: {rec['passed_differ']} / "
                   f"{rec['score_differ']}" + (f"; unmatched {rec['only_this']} / "
                                               f"{rec['only_rev']}"
                                               if rec["only_this"] or rec["only_rev"]
                                               else ""))
        lines.append(f"| {f['label']} | `{f['agent']}` | {f['episodes']} | "
                     f"{f['this']['wall_s']:.0f} / {f['this']['cpu_s']:.0f} | "
                     f"{f['rev']['wall_s']:.0f} / {f['rev']['cpu_s']:.0f} | "
                     f"{_ratio_cell(f['wall_ratio'])} | {_ratio_cell(f['cpu_ratio'])} | "
                     f"{records} |")
    t = result["total"]
    lines.append(f"| **total** | | | **{t['this']['wall_s']:.0f}** / {t['this']['cpu_s']:.0f} "
                 f"| **{t['rev']['wall_s']:.0f}** / {t['rev']['cpu_s']:.0f} | "
                 f"**{_ratio_cell(t['wall_ratio'])}** | **{_ratio_cell(t['cpu_ratio'])}** | |")
    return "\n".join(lines)


def keyed_markdown(result: dict) -> str:
    """The table of a `--keyed` run: unkeyed and keyed medians, ratio keyed / unkeyed."""
    lines = [machine_line(result) + f" {result['keyed']['rounds']} round(s) per side, "
             "alternating, each from an empty cache; medians.", "",
             "| suite | agent | episodes | unkeyed: wall s / CPU s | keyed: wall s / CPU s "
             "| wall ratio | CPU ratio |", "|---|---|---:|---:|---:|---:|---:|"]
    for f in result["suites"]:
        lines.append(f"| {f['label']} | `{f['agent']}` | {f['episodes']} | "
                     f"{f['unkeyed']['wall_s']:.0f} / {f['unkeyed']['cpu_s']:.0f} | "
                     f"{f['keyed']['wall_s']:.0f} / {f['keyed']['cpu_s']:.0f} | "
                     f"{_ratio_cell(f['wall_ratio'])} | {_ratio_cell(f['cpu_ratio'])} |")
    return "\n".join(lines)


def render(paths: list[Path]) -> str:
    """The markdown of one --json file, or of several side by side."""
    results = [json.loads(path.read_text()) for path in paths]
    if len(results) == 1 and "against" in results[0]:
        return against_markdown(results[0])
    if len(results) == 1 and "keyed" in results[0]:
        return keyed_markdown(results[0])
    if len(results) == 1:
        return markdown(results[0])
    return comparison(results, [path.stem.removeprefix("whole_platform_") for path in paths])


def readme_with_tables(content: str) -> str:
    """README text with every README_TABLES block rendered afresh from its JSON files."""
    for name, files in README_TABLES.items():
        content = replace_block(content, f"whole-platform:{name}",
                                render([ROOT / f for f in files]))
    return content


def paired(plan: list, executor_args: list[str], scratch: Path, rounds: int,
            sides: dict[str, dict[str, str]], extra_args: dict[str, list[str]],
            compare: bool, on_suite) -> list[dict]:
    """Each suite of `plan` run on both `sides` (name -> environment overrides, the first
    side is "this" of `revisions.order`), alternating over `rounds`, each run from an
    empty cache; per side the medians, per suite the ratio second / first."""
    first, second = list(sides)
    out = []
    for label, suite, options, agent, roles in plan:
        options = [*options, *extra_args.get(label, []),
                   *(extra_args.get(suite, []) if suite != label else [])]
        runs_of: dict[str, list[Figure]] = {first: [], second: []}
        for i, which in enumerate(revisions.order(rounds)):
            side = first if which == "this" else second
            cache = scratch / f"cache-{label.replace(' ', '-')}-{side}-{i}"
            env = revisions.run_env(None, cache) | sides[side]
            figure = run_one(label, suite, options, agent, roles, executor_args, scratch,
                             env=env, tag=f"-{side}-{i}")
            shutil.rmtree(cache, ignore_errors=True)
            runs_of[side].append(figure)
            print(f"# {label} {agent} [{side}]: {figure.episodes} episodes in "
                  f"{figure.wall_s} s, {figure.cpu_s} CPU s", file=sys.stderr, flush=True)
        row: dict = {"label": label, "agent": agent,
                     "episodes": runs_of[first][0].episodes, "plan_args": options}
        for side, figures in runs_of.items():
            row[side] = {"wall_s": revisions.median([f.wall_s for f in figures]),
                         "cpu_s": revisions.median([f.cpu_s for f in figures]),
                         "runs_wall_s": [f.wall_s for f in figures],
                         "runs_cpu_s": [f.cpu_s for f in figures],
                         "passed": [f.passed for f in figures],
                         "errors": [f.error for f in figures if f.error]}
        row["wall_ratio"] = revisions.ratio(row[second]["wall_s"], row[first]["wall_s"])
        row["cpu_ratio"] = revisions.ratio(row[second]["cpu_s"], row[first]["cpu_s"])
        if compare:  # the first run of each side
            sequence = revisions.order(rounds)
            first_dir, second_dir = (
                run_dir(scratch, suite, options, agent, f"-{side}-{sequence.index(which)}")
                for side, which in ((first, "this"), (second, "rev")))
            row["records"] = revisions.compare_records(first_dir / "records.jsonl",
                                                       second_dir / "records.jsonl")
        out.append(row)
        on_suite(out)
    return out


def totals(rows: list[dict], first: str, second: str) -> dict:
    total = {side: {"wall_s": round(sum(r[side]["wall_s"] for r in rows), 2),
                    "cpu_s": round(sum(r[side]["cpu_s"] for r in rows), 2)}
             for side in (first, second)}
    total["wall_ratio"] = revisions.ratio(total[second]["wall_s"], total[first]["wall_s"])
    total["cpu_ratio"] = revisions.ratio(total[second]["cpu_s"], total[first]["cpu_s"])
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executor", default="process", choices=["serial", "process", "ray"])
    parser.add_argument("--address", help="Ray cluster address (with --executor ray)")
    parser.add_argument("--all-roles", action="store_true",
                        help="also every calibration role's agent of every suite")
    parser.add_argument("--suites", help="comma-separated labels or suites to run "
                        "(e.g. 'gravity,mad quantum'; default: all)")
    parser.add_argument("--suite-args", action="append", default=[], metavar="LABEL=ARGS",
                        help="extra `discoverygym run` arguments for one suite label or "
                        "suite, e.g. 'mad quantum=--seeds 0' (repeatable)")
    parser.add_argument("--runs-dir", type=Path,
                        help="keep each run's directory (records) here (default: a "
                        "temporary folder, removed)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--against", metavar="REV",
                        help="also run git revision REV (its src/, this environment's "
                        "libraries), alternating, each run from an empty cache; print "
                        "the ratios REV / this tree and how the records differ")
    parser.add_argument("--keyed", action="store_true",
                        help="run each suite unkeyed and with a fresh key, alternating, "
                        "each from an empty cache; print the ratios keyed / unkeyed")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --against or --keyed: runs per side (medians)")
    parser.add_argument("--markdown-from", type=Path, metavar="JSON", nargs="+",
                        help="print the markdown table of an earlier --json file (of "
                        "several: their wall times side by side) and exit")
    parser.add_argument("--write-readme", action="store_true",
                        help="rewrite docs/scale.md's tables (README_TABLES) from their JSON files")
    parser.add_argument("--check-readme", action="store_true",
                        help="exit 1 if a README table differs from its JSON files")
    args = parser.parse_args(argv)
    if args.markdown_from:
        print(render(args.markdown_from))
        return 0
    if args.write_readme or args.check_readme:
        content = README.read_text()
        try:
            fresh = readme_with_tables(content)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if args.write_readme:
            README.write_text(fresh)
        elif fresh != content:
            print("error: docs/scale.md's whole-platform tables differ from their JSON files; "
                  "run python bench/whole_platform.py --write-readme", file=sys.stderr)
            return 1
        return 0
    try:
        extra_args = parse_suite_args(args.suite_args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    plan = runs(args.all_roles)
    if args.suites:
        wanted = {w.strip() for w in args.suites.split(",") if w.strip()}
        plan = [r for r in plan if r[0] in wanted or r[1] in wanted]
        if not plan:
            print(f"error: no suite matches --suites {args.suites!r}", file=sys.stderr)
            return 1
    executor_args = ["--executor", args.executor, "--workers", str(args.workers)]
    if args.address:
        executor_args += ["--address", args.address]
    if args.against or args.keyed:
        if args.against and args.keyed:
            print("error: give --against or --keyed, not both", file=sys.stderr)
            return 1
        if args.rounds < 1:
            print("error: --rounds must be at least 1", file=sys.stderr)
            return 1
        return compare_main(args, plan, executor_args, extra_args)

    load_before = os.getloadavg()
    start = time.perf_counter()
    figures: list[Figure] = []

    def result(complete: bool) -> dict:
        headline = [f for f in figures if "headline" in f.roles]
        return {
            "complete": complete,
            "total_s": round(time.perf_counter() - start, 2),
            "headline_total_s": round(sum(f.wall_s for f in headline), 2),
            "total_cpu_s": round(sum(f.cpu_s for f in figures), 2),
            "executor": args.executor, "workers": args.workers, "address": args.address,
            "all_roles": args.all_roles, "suite_args": extra_args,
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "machine": machine(),
            "note": ("cpu_s and peak_rss_mb count this machine's run only: the cluster's "
                     "workers are not its children") if args.address else None,
            "suites": [asdict(f) for f in figures],
        }

    with contextlib.ExitStack() as stack:
        scratch = scratch_dir(stack, args.runs_dir)
        for label, suite, options, agent, roles in plan:
            extra = [*extra_args.get(label, []),
                     *(extra_args.get(suite, []) if suite != label else [])]
            options = [*options, *extra]
            figure = run_one(label, suite, options, agent, roles, executor_args, scratch)
            figure.plan_args = options[len(options) - len(extra):] if extra else []
            figures.append(figure)
            print(f"# {label} {agent}: {figure.episodes} episodes in {figure.wall_s} s",
                  file=sys.stderr, flush=True)
            if args.json:  # after each suite, so a run cut short keeps what it measured
                args.json.write_text(json.dumps(result(False), indent=2) + "\n")
    final = result(True)
    print_table(figures, final["total_s"])
    if args.json:
        args.json.write_text(json.dumps(final, indent=2) + "\n")
    return 1 if any(f.error for f in figures) else 0


def scratch_dir(stack: contextlib.ExitStack, runs_dir: Path | None) -> Path:
    """Where the runs go: `--runs-dir` (kept), else a temporary folder `stack` removes."""
    if runs_dir:
        runs_dir.mkdir(parents=True, exist_ok=True)
        return runs_dir
    return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dg-platform-")))


def compare_main(args: argparse.Namespace, plan: list, executor_args: list[str],
                 extra_args: dict[str, list[str]]) -> int:
    """`--against REV` or `--keyed`: both sides of each suite, medians and ratios."""
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        scratch = scratch_dir(stack, args.runs_dir)
        header: dict = {"executor": args.executor, "workers": args.workers,
                        "address": args.address, "suite_args": extra_args,
                        "loadavg_before": [round(x, 2) for x in load_before],
                        "machine": machine()}
        if args.against:
            try:
                commit = revisions.resolve(ROOT, args.against)
            except ValueError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            src = revisions.side_tree(ROOT, commit, scratch)
            side_env = revisions.run_env(src, scratch / "unused-cache")
            side_env.pop("DISCOVERYGYM_CACHE")
            found = revisions.imported_from(side_env)
            if found != src.resolve():
                print(f"error: the side tree is not what runs ({found})", file=sys.stderr)
                return 1
            header["against"] = {"rev": args.against, "commit": commit, "rounds": args.rounds}
            sides, compare = {"this": {}, "rev": side_env}, True
        else:
            key = scratch / "bench.key"
            if not key.exists():
                cli = shutil.which("discoverygym") or str(Path(sys.executable).parent /
                                                          "discoverygym")
                subprocess.run([cli, "key", "new", "--out", str(key)], check=True,
                               capture_output=True)
            header["keyed"] = {"rounds": args.rounds}
            executor_keyed = {"DISCOVERYGYM_KEY_FILE": str(key)}
            sides, compare = {"unkeyed": {}, "keyed": executor_keyed}, False
        first, second = list(sides)

        def result(rows: list[dict], complete: bool) -> dict:
            return {**header, "complete": complete,
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                    "suites": rows, "total": totals(rows, first, second)}

        def checkpoint(rows: list[dict]) -> None:
            if args.json:
                args.json.write_text(json.dumps(result(rows, False), indent=2) + "\n")

        rows = paired(plan, executor_args, scratch, args.rounds, sides, extra_args,
                      compare, checkpoint)
        final = result(rows, True)
    if args.json:
        args.json.write_text(json.dumps(final, indent=2) + "\n")
    print(render_result(final))
    failed = any(r[side]["errors"] for r in rows for side in (first, second))
    return 1 if failed else 0


def render_result(result: dict) -> str:
    return against_markdown(result) if "against" in result else keyed_markdown(result)


if __name__ == "__main__":
    sys.exit(main())
