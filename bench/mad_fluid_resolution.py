"""The accuracy cost of the fluid world's discovery grid: the discovery question (the
fresh preparation's vorticity at the 16 query points at the 5 query times) answered on
the default grid against a finer one, for a few seeds and laws, next to the size of the
law's effect (normal physics against the truth on the default grid).

Prints one JSON object: per (law, seed) the relative L2 of grid N against grid 2N and of
normal physics against the truth on grid N, and medians per law.

Usage: python bench/mad_fluid_resolution.py [--seeds 0-4] [--laws normal,vel0.7,vort10]
       [--resolution 64] [--fine 128]"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main(argv: list[str] | None = None) -> dict:
    from discoverygym.core.seeds import parse_seeds
    from discoverygym.suites.mad import fluid_world as fw

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--laws", default="normal,vel0.7,vort10,combined")
    parser.add_argument("--resolution", type=int, default=fw.DISCOVERY_RESOLUTION)
    parser.add_argument("--fine", type=int, default=2 * fw.DISCOVERY_RESOLUTION)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = []
    for law in args.laws.split(","):
        for seed in parse_seeds(args.seeds):
            coarse = fw.FluidWorld(seed=seed, law=law, resolution=args.resolution)
            fine = fw.FluidWorld(seed=seed, law=law, resolution=args.fine)
            truth = coarse.truth_at_queries()
            rows.append({
                "law": law, "seed": seed,
                "thickness": round(coarse.preparation().thickness, 4),
                "grid_vs_fine": fw.relative_l2(truth, fine.truth_at_queries()),
                "normal_vs_truth": fw.relative_l2(coarse.preparation_rollout("normal"), truth),
            })
    medians = {law: {key: statistics.median(r[key] for r in rows if r["law"] == law)
                     for key in ("grid_vs_fine", "normal_vs_truth")}
               for law in args.laws.split(",")}
    out = {"resolution": args.resolution, "fine": args.fine, "seeds": args.seeds,
           "rows": rows, "medians": medians, "wall_s": round(time.perf_counter() - start, 1)}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
