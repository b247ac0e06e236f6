"""The mad fluid world on CPU and, when JAX sees one, on a GPU: seconds per simulated
time unit of the world's solver (`fluid_solver.simulate`, float64 as the world runs it)
on a Kelvin-Helmholtz double shear layer at 128², 256² and 512², timed after
compilation, and the CPU/GPU ratio per size.

The prepared script for the README's GPU line: run it on a machine with a GPU and the
`[gpu]` extra (`pip install -e ".[mad,gpu]"`); without a GPU it times the CPU only and
says so. Prints one JSON object (median of `--repeats` runs per device and size).

    python bench/mad_fluid_gpu.py [--sizes 128,256,512] [--repeats 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import jax

from discoverygym.physics import fluid_solver as fs

NU = 1e-3
THICKNESS, AMPLITUDE = 0.1, 0.3


def gpu_devices() -> list:
    """JAX's GPU devices; none where JAX has no GPU backend."""
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:  # "Unknown backend: 'gpu'" on a CPU-only jaxlib
        return []


def seconds_per_time_unit(device, n: int, repeats: int) -> dict:
    omega0 = fs.double_shear_layer(n, THICKNESS, AMPLITUDE)
    with jax.default_device(device):
        fs.simulate(omega0, [0.05], nu=NU)  # compile for this device and size
        times, steps = [], 0
        for _ in range(repeats):
            start = time.perf_counter()
            solution = fs.simulate(omega0, [1.0], nu=NU)  # returns NumPy: synchronised
            times.append(time.perf_counter() - start)
            steps = solution.n_steps
    return {"s_per_time_unit": round(statistics.median(times), 4), "steps": steps}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="128,256,512")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
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
        row = {"cpu": seconds_per_time_unit(cpu, n, args.repeats)}
        if gpus:
            row["gpu"] = seconds_per_time_unit(gpus[0], n, args.repeats)
            row["cpu_over_gpu"] = round(row["cpu"]["s_per_time_unit"]
                                        / row["gpu"]["s_per_time_unit"], 2)
        result["sizes"][str(n)] = row
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
