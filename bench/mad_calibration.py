"""Calibration of the mad suite: for every law of the chosen worlds, the pass rate and
median error of the law-aware oracle, the normal-physics baseline and a trivial one,
over a set of seeds. Prints one JSON object; the README's Calibration table is this
output.

- law-oracle: told the law's form (not its numbers), fits it to its own measurements
  (privileged; classical and quantum worlds so far);
- normal physics: newtonian (classical), navier-stokes (fluid), schrodinger (quantum);
- trivial: last-seen (classical), persistence (fluid), uniform (quantum).

Targets (issue 16): law-oracle passes >= 80 % of every law, the normal-physics baseline
<= 20 % of every altered law. `meets_targets` says where they hold.

Usage: python bench/mad_calibration.py [--worlds classical] [--seeds 0-19]
       [--protocol discovery|paper] [--laws normal,kappa20] [--agents ...] [--workers 2]
       [--option t_max=30 ...] [--per-seed] [--readme PATH]

With --readme, each world's table is also written into that file between the markers
`<!-- mad-calibration:<world>:begin -->` and `<!-- mad-calibration:<world>:end -->`
(`<world>-<protocol>` for a protocol other than the world's default), so the suite
README's tables come from this command."""

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
    "classical": {"law-oracle": "oracle", "newtonian": "normal-physics", "last-seen": "trivial"},
    "fluid": {"navier-stokes": "normal-physics", "persistence": "trivial"},
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


def markdown_table(world: str, table: dict[str, Any], out: dict[str, Any]) -> str:
    """One world's table in the README's form: law x agent, pass rate / median error."""
    rows = {key: agents for key, agents in table.items() if key.startswith(f"{world}-")}
    first = next(iter(rows.values()))
    agents = list(first)
    heads = [f"{a} ({first[a]['role']})" for a in agents]
    lines = [f"| law | {' | '.join(heads)} |", "|---|" + "---|" * len(agents)]
    for key, entry in rows.items():
        cells = []
        for a in agents:
            e = entry[a]
            error = "-" if e["median_error"] is None else f"{e['median_error']:.4f}"
            cells.append(f"{e['pass_rate']:.2f} / {error}"
                         + (f" ({e['crashes']} crashed)" if e["crashes"] else ""))
        lines.append(f"| {key} | {' | '.join(cells)} |")
    verdicts = out["meets_targets"]
    missed = [k for k in rows if verdicts[k]["oracle_passes"] is False
              or not verdicts[k]["normal_physics_fails"]]
    lines += ["", f"Pass rate / median {first[agents[0]].get('metric') or 'error'}"
              f", seeds {out['seeds']}, options {json.dumps(out['options'])}; "
              f"{out['wall_s']:.0f} s; targets "
              + ("met on every law." if not missed else "missed on " + ", ".join(missed) + "."),
              f"Produced by `{out['command']}`."]
    return "\n".join(lines)


def write_readme(path: str, world: str, key: str, text: str) -> None:
    """Replace the text between the world's markers in `path`."""
    begin, end = f"<!-- mad-calibration:{key}:begin -->", f"<!-- mad-calibration:{key}:end -->"
    with open(path, encoding="utf-8") as f:
        readme = f.read()
    if begin not in readme or end not in readme:
        raise SystemExit(f"{path} has no markers {begin} / {end} for the {world} table")
    head, rest = readme.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")


def parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from discoverygym.suites.mad import parse_seeds
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
                        help="write each world's table between its markers in this file")
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
            "metric": rows[0]["metric"],
            "n": len(rows), "pass_rate": sum(r["passed"] for r in rows) / len(rows),
            "median_error": statistics.median(errors) if errors else None,
            "crashes": sum(r["crash"] is not None for r in rows),
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
        verdicts[key] = {"oracle_passes": oracle_ok, "normal_physics_fails": normal_ok}
    from discoverygym import __version__

    out = {"seeds": args.seeds, "options": options, "table": table,
           "meets_targets": verdicts, "version": __version__,
           "wall_s": round(time.perf_counter() - start, 1),
           "command": "python bench/mad_calibration.py " + " ".join(
               argv if argv is not None else sys.argv[1:])}
    if args.readme:
        for world in args.worlds.split(","):
            cls = world_class(world)
            protocol = options.get("protocol", cls.protocols[0])
            key = world if protocol == cls.protocols[0] else f"{world}-{protocol}"
            write_readme(args.readme, world, key, markdown_table(world, table, out))
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
