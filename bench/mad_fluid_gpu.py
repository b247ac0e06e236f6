"""The mad fluid world on CPU and, when JAX sees one, on a GPU: seconds per simulated
time unit of the world's solver (`fluid_solver.simulate`, float64 as the world runs it)
on a Kelvin-Helmholtz double shear layer at 128², 256² and 512², timed after
compilation, the CPU/GPU ratio per size, and how far the two devices' fields at t = 1
differ (float64 on both, so round-off only).

The prepared script for the README's GPU line: run it on a machine with a GPU and the
`[gpu]` extra (`pip install -e ".[mad,gpu]"`); without a GPU it times the CPU only and
says so. Prints one JSON object (median of `--repeats` runs per device and size).

    python bench/mad_fluid_gpu.py [--sizes 128,256,512] [--repeats 3] [--json FILE]

The README's GPU table is written from the stored results (README_TABLE) by
`--write-readme`; `--check-readme` fails when the two differ.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

from discoverygym.physics import fluid_solver as fs
from discoverygym.report.markers import MarkerError, read_block, write_block

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "docs" / "scale.md"
# The measured runs behind the README's table (one file per call on the GPU machine).
README_TABLE = ("bench/results/mad_fluid_gpu_h100.json",
                "bench/results/mad_fluid_gpu_h100_1024.json")
MARKER = "fluid-gpu"

NU = 1e-3
THICKNESS, AMPLITUDE = 0.1, 0.3


def gpu_devices() -> list:
    """JAX's GPU devices; none where JAX has no GPU backend."""
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # "Unknown backend: 'gpu'" on a CPU-only jaxlib
        return []


def seconds_per_time_unit(device, n: int, repeats: int) -> tuple[dict, np.ndarray]:
    """The timing row for one device and size, and the field at t = 1 it computed."""
    omega0 = fs.double_shear_layer(n, THICKNESS, AMPLITUDE)
    with jax.default_device(device):
        fs.simulate(omega0, [0.05], nu=NU)  # compile for this device and size
        times, steps, final = [], 0, None
        for _ in range(repeats):
            start = time.perf_counter()
            solution = fs.simulate(omega0, [1.0], nu=NU)  # returns NumPy: synchronised
            times.append(time.perf_counter() - start)
            steps, final = solution.n_steps, solution.omega_hat[-1]
    return {"s_per_time_unit": round(statistics.median(times), 4), "steps": steps}, final


def relative_difference(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / max |a|: how far two devices' float64 fields at t = 1 differ."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


def markdown(results: list[dict]) -> str:
    """One table of every grid size in `results` (runs on the same machine), with the
    machine named under it."""
    lines = ["| grid | steps per time unit | CPU s per time unit | GPU s per time unit "
             "| CPU / GPU | max rel. difference of the fields |",
             "|---|---|---|---|---|---|"]
    for result in results:
        for size, row in result["sizes"].items():
            gpu = row.get("gpu")
            lines.append(
                f"| {size}² | {row['cpu']['steps']} | {row['cpu']['s_per_time_unit']} "
                f"| {gpu['s_per_time_unit'] if gpu else 'not measured'} "
                f"| {row.get('cpu_over_gpu', '-')} "
                f"| {row.get('gpu_vs_cpu_max_rel_diff', '-')} |")
    first = results[0]
    lines.append("")
    lines.append(f"GPU: {first['gpu'] or 'none'}; CPU: the same machine's "
                 f"{first['cpu_count']} cores; JAX {first['jax']}; float64 on both.")
    return "\n".join(lines)


def readme_check(write: bool) -> int:
    """Write (or check) the README's table from README_TABLE's files."""
    block = markdown([json.loads((ROOT / f).read_text()) for f in README_TABLE])
    if write:
        try:
            write_block(README, MARKER, block)
        except MarkerError as exc:
            print(f"error: docs/scale.md: {exc}", file=sys.stderr)
            return 1
        return 0
    if read_block(README.read_text(), MARKER) != block:
        print("error: docs/scale.md's GPU table differs from its JSON files; run "
              "python bench/mad_fluid_gpu.py --write-readme", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="128,256,512")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--write-readme", action="store_true",
                        help="rewrite docs/scale.md's GPU table from README_TABLE's files")
    parser.add_argument("--check-readme", action="store_true",
                        help="exit 1 if docs/scale.md's GPU table differs from its files")
    args = parser.parse_args(argv)
    if args.write_readme or args.check_readme:
        return readme_check(args.write_readme)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    cpu = jax.devices("cpu")[0]
    gpus = gpu_devices()
    result: dict = {
        "jax": jax.__version__, "platform": platform.platform(), "cpu_count": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in os.getloadavg()],
        "gpu": gpus[0].device_kind if gpus else None,
        "note": None if gpus else "no GPU visible to JAX: CPU figures only",
        "sizes": {},
    }
    for n in sizes:
        row: dict = {}
        row["cpu"], cpu_field = seconds_per_time_unit(cpu, n, args.repeats)
        if gpus:
            row["gpu"], gpu_field = seconds_per_time_unit(gpus[0], n, args.repeats)
            # the same float64 physics on both: FFT round-off apart, never a real gap
            row["gpu_vs_cpu_max_rel_diff"] = float(f"{relative_difference(cpu_field, gpu_field):.2e}")
            row["cpu_over_gpu"] = round(row["cpu"]["s_per_time_unit"]
                                        / row["gpu"]["s_per_time_unit"], 2)
        result["sizes"][str(n)] = row
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
