"""Kelvin-Helmholtz double shear layers on the periodic square (the data of
`fluid-vorticity-forecast`), simulated by the mad suite's pseudo-spectral solver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def forecast(out: Path, _inputs: Path, args: dict[str, Any]) -> None:
    """args: grid_sim, grid_data, viscosity, snapshot_times, forecast_times, flows {name:
    thickness, amplitude, modulation_gamma (0: the standard equations), and optionally
    orientation: "along_x" (the default: layers along x, at y = pi/2 and 3 pi/2) or
    "along_y" (the same flow with x and y exchanged)}. The agent sees the vorticity on
    the data grid at the snapshot times; the truth is the field at the forecast times."""
    from ...physics import fluid_solver as fs  # build time only: the package needs NumPy alone

    n_sim, n_data = args["grid_sim"], args["grid_data"]
    snapshot_times, forecast_times = args["snapshot_times"], args["forecast_times"]
    for name, flow in args["flows"].items():
        gamma = flow["modulation_gamma"]
        modulation = fs.VorticityModulation(gamma=gamma) if gamma else None
        omega0 = fs.double_shear_layer(n_sim, flow["thickness"], flow["amplitude"])
        orientation = flow.get("orientation", "along_x")
        if orientation not in ("along_x", "along_y"):
            raise ValueError(f"{name}: orientation must be along_x or along_y")
        if orientation == "along_y":
            # A development flow that differs in geometry, so that its truth copied to
            # an evaluation flow scores badly (the copied-development check).
            omega0 = np.ascontiguousarray(omega0.T)
        solution = fs.simulate(omega0, snapshot_times + forecast_times,
                               nu=args["viscosity"], modulation=modulation)
        step = n_sim // n_data
        fields = np.stack([np.fft.irfft2(w, s=(n_sim, n_sim))[::step, ::step]
                           for w in solution.omega_hat]).astype(np.float32)
        data = out / "data" / name
        data.mkdir(parents=True, exist_ok=True)
        np.save(data / "snapshots.npy", fields[:len(snapshot_times)])
        (data / "info.json").write_text(json.dumps({
            "snapshot_times": snapshot_times, "forecast_times": forecast_times,
            "viscosity": args["viscosity"], "grid_points_per_side": n_data}, indent=1) + "\n")
        truth = out / "ground_truth" / name
        truth.mkdir(parents=True, exist_ok=True)
        np.save(truth / "forecast.npy", fields[len(snapshot_times):])
