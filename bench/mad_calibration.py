"""Calibration of the mad suite: for every law of the chosen worlds, the pass rate and
median error of the law-aware oracle, the normal-physics baseline and a trivial one,
over a set of seeds. Prints one JSON object; the README's Calibration table is this
output.

- law-oracle: told the law's form (not its numbers), fits it to its own measurements
  (privileged; every world);
- normal physics: newtonian (classical), navier-stokes (fluid), schrodinger (quantum);
- trivial: last-seen (classical), persistence (fluid), uniform (quantum); no-science:
  ballistic (classical).

Targets (issue 16): law-oracle passes >= 80 % of every law, the normal-physics baseline
<= 20 % of every altered law, the trivial and no-science ones <= 20 % of every law.
`meets_targets` says where they hold.

With `--readme PATH` the table of each world is also written into that file between
the markers `<!-- mad-calibration:<world>:begin -->` and `<!-- mad-calibration:<world>:end
-->` (the suite README's Calibration section; with `--protocol P`, the markers
`<world>:P` when the file has them), so the published table is this command's output,
never typed.

Usage: python bench/mad_calibration.py [--worlds classical] [--seeds 0-19]
       [--protocol discovery|paper] [--laws normal,kappa20] [--agents ...] [--workers 2]
       [--option t_max=30 ...] [--per-seed] [--readme src/discoverygym/suites/mad/README.md]"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

AGENTS_BY_WORLD = {
    "classical": {"law-oracle": "oracle", "newtonian": "normal-physics", "last-seen": "trivial",
                  "ballistic": "no-science"},
    "fluid": {"law-oracle": "oracle", "navier-stokes": "normal-physics",
              "persistence": "trivial"},
    "quantum": {"law-oracle": "oracle", "schrodinger": "normal-physics", "uniform": "trivial"},
}
ORACLE_TARGET = 0.8
NORMAL_PHYSICS_LIMIT = 0.2


def play(job: tuple[str, str, int, dict[str, Any], str]) -> dict[str, Any]:
    from discoverygym.run.episode_worker import play_scripted

    world, law, seed, options, agent = job
    spec = {"suite": "mad", "task_id": f"{world}-{law}", "seed": seed, "options": options}
    record = play_scripted(spec, agent)
    return {"world": world, "law": law, "seed": seed, "agent": agent,
            "passed": bool(record["passed"]), "error": record["value"],
            "skill": (record.get("details") or {}).get("skill"),
            "crash": record.get("error"), "metric": record.get("metric"),
            "reference": (record.get("details") or {}).get("reference")}


def markdown_table(out: dict[str, Any], world: str) -> str:
    """The calibration table of one world as Markdown: one row per law, per agent the
    pass rate / median error, and whether the targets hold."""
    rows = {key: agents for key, agents in out["table"].items()
            if key.startswith(f"{world}-")}
    agents = list(next(iter(rows.values())))
    header = ["law", *[f"{a} ({rows[next(iter(rows))][a]['role']})" for a in agents],
              "targets met"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, entries in rows.items():
        cells = [key]
        for agent in agents:
            entry = entries[agent]
            error = entry["median_error"]
            cells.append(f"{entry['pass_rate']:.2f} / "
                         + ("-" if error is None else f"{error:.3g}")
                         + (f" ({entry['crashes']} crashed)" if entry["crashes"] else ""))
        verdict = out["meets_targets"][key]
        met = [verdict["oracle_passes"], verdict["normal_physics_fails"],
               verdict["trivial_fails"]]
        cells.append("yes" if all(m is not False for m in met) else "**no**")
        lines.append("| " + " | ".join(cells) + " |")
    options = ", ".join(f"{k}={v}" for k, v in out["options"].items()) or "defaults"
    metric = next(iter(next(iter(rows.values())).values()))["metric"] or "error"
    lines.append("")
    lines.append(f"Pass rate / median {metric} over seeds {out['seeds']} "
                 f"({options}); `{out['command']}`, discoverygym {out['version']}, "
                 f"{out['wall_s']:.0f} s.")
    return "\n".join(lines)


def write_into_readme(path: str, out: dict[str, Any]) -> list[str]:
    """Replace each calibrated world's table between its markers in `path`; returns the
    worlds written. A missing marker is an error (nothing is written then)."""
    from pathlib import Path

    text = Path(path).read_text()
    worlds = sorted({key.split("-", 1)[0] for key in out["table"]})
    protocol = out["options"].get("protocol")
    for world in worlds:
        # A protocol's own markers (<world>:<protocol>) win over the world's default ones.
        names = ([f"{world}:{protocol}"] if protocol else []) + [world]
        found = [name for name in names if f"<!-- mad-calibration:{name}:begin -->" in text
                 and f"<!-- mad-calibration:{name}:end -->" in text]
        if not found:
            raise SystemExit(f"{path} has no markers <!-- mad-calibration:{names[0]}:begin "
                             "--> ... :end -->")
        begin, end = (f"<!-- mad-calibration:{found[0]}:begin -->",
                      f"<!-- mad-calibration:{found[0]}:end -->")
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = f"{head}{begin}\n{markdown_table(out, world)}\n{end}{tail}"
    Path(path).write_text(text)
    return worlds


def parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from discoverygym.core.seeds import parse_seeds
    from discoverygym.suites.mad.worlds import world_class

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", default="classical")
    parser.add_argument("--laws", default=None, help="comma-separated (default: all)")
    parser.add_argument("--agents", default=None, help="comma-separated (default: per world)")
    parser.add_argument("--seeds", default="0-19")
    parser.add_argument("--protocol", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--per-seed", action="store_true",
                        help="also list each episode's error and pass")
    parser.add_argument("--option", action="append", default=[],
                        help="extra world option NAME=VALUE (e.g. t_max=30)")
    parser.add_argument("--readme", default=None,
                        help="also write each world's table between its markers in this file")
    args = parser.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    options: dict[str, Any] = dict(o.split("=", 1) for o in args.option)
    options = {k: parse_value(v) for k, v in options.items()}
    if args.protocol:
        options["protocol"] = args.protocol
    jobs = []
    for world in args.worlds.split(","):
        laws = args.laws.split(",") if args.laws else list(world_class(world).laws)
        agents = args.agents.split(",") if args.agents else list(AGENTS_BY_WORLD[world])
        jobs += [(world, law, seed, options, agent)
                 for law in laws for agent in agents for seed in seeds]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = list(pool.map(play, jobs))
    table: dict[str, Any] = {}
    for world, law, _, _, agent in jobs:
        key = f"{world}-{law}"
        if agent in table.setdefault(key, {}):
            continue
        rows = [r for r in results if r["world"] == world and r["law"] == law
                and r["agent"] == agent]
        errors = [r["error"] for r in rows if r["error"] is not None]
        table[key][agent] = {
            "role": AGENTS_BY_WORLD.get(world, {}).get(agent, "other"),
            "n": len(rows), "pass_rate": sum(r["passed"] for r in rows) / len(rows),
            "median_error": statistics.median(errors) if errors else None,
            "crashes": sum(r["crash"] is not None for r in rows),
            "metric": next((r["metric"] for r in rows if r["metric"]), None),
            "reference": sorted({r["reference"] for r in rows if r["reference"]}),
        }
        if args.per_seed:
            table[key][agent]["episodes"] = [[r["seed"], r["error"], r["passed"]] for r in rows]
    verdicts = {}
    for key, agents in table.items():
        altered = not key.endswith("-normal")
        oracle_ok = all(a["pass_rate"] >= ORACLE_TARGET for a in agents.values()
                        if a["role"] == "oracle") if any(
            a["role"] == "oracle" for a in agents.values()) else None
        normal_ok = all(a["pass_rate"] <= NORMAL_PHYSICS_LIMIT for a in agents.values()
                        if a["role"] == "normal-physics") if altered else True
        trivial_ok = all(a["pass_rate"] <= NORMAL_PHYSICS_LIMIT for a in agents.values()
                         if a["role"] in ("trivial", "no-science"))
        verdicts[key] = {"oracle_passes": oracle_ok, "normal_physics_fails": normal_ok,
                         "trivial_fails": trivial_ok}
    from discoverygym import __version__

    out = {"seeds": args.seeds, "options": options, "table": table,
           "meets_targets": verdicts, "version": __version__,
           "wall_s": round(time.perf_counter() - start, 1),
           "command": "python bench/mad_calibration.py " + " ".join(
               argv if argv is not None else sys.argv[1:])}
    if args.readme:
        out["written_into"] = {"path": args.readme,
                               "worlds": write_into_readme(args.readme, out)}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
