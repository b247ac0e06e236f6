"""Fluid forecast: a periodic two-dimensional flow with a hidden extra force.

A random smooth vorticity field evolves on the periodic square under the
incompressible Navier-Stokes equations at a stated viscosity plus a hidden
vorticity-modulation force C = gamma cos(pi omega / 16) (gamma drawn); the mad suite's
pseudo-spectral JAX solver integrates it at 64^2. The agent sees noisy 32^2 snapshots
at t = 0..2 and forecasts t = 3 and 4; the truth is the held-out noisy fields, so the
metric has a floor (the noise).

- baseline: persistence of the last snapshot;
- state of the art: the standard Navier-Stokes equations at the stated viscosity,
  integrated pseudo-spectrally from the last snapshot on the data grid (Orszag 1971;
  the mad suite's solver);
- bound: the noise-free truth."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..base import Draw, Family, Metric, Reference, npy_bytes

N_SIM, N_DATA = 64, 32
VISCOSITY = 2e-3
SNAPSHOT_TIMES = [0.0, 0.5, 1.0, 1.5, 2.0]
FORECAST_TIMES = [3.0, 4.0]
NOISE_FRACTION = 0.03  # noise per grid value, as a fraction of the field's RMS
MODULATION_BETA = math.pi / 16.0
SOLVER_VERSION = "mad-fluid-solver/pseudo-spectral-lawson-rk4"

_README = """# Forecast a periodic flow

## Scientific problem

An incompressible two-dimensional flow evolves on the periodic square
[0, 2 pi) x [0, 2 pi). The kinematic viscosity is stated in `info.json`. Whether the
flow is governed by the ordinary equations of a viscous fluid alone is not stated.

## Task objective

For each flow, forecast the vorticity field on the data grid at the future times listed
in `info.json`.

## Dataset information

`data/<flow>/snapshots.npy`: noisy vorticity snapshots on a 32 x 32 grid;
`data/<flow>/info.json`: the snapshot times, the forecast times, the viscosity, the grid
size and the noise level. See `data_description.md`.

## Evaluation metrics

Relative L2 error ||forecast - truth|| / ||truth|| over both forecast times and all grid
points, where the truth is a held-out measurement carrying the same noise as the data
(lower is better), compared with a reference value per flow.

## Output format

For each flow write `<OUTPUT_DIR>/<flow>/forecast.npy`: a NumPy array of shape
(2, 32, 32), real floating point, indexed [forecast time, ix, iy] like the snapshots.

## Submission guidelines

A missing or unreadable file, a wrong shape, a non-numeric dtype or a non-finite value
counts as a failure for that flow. You may ask for an evaluation of your current
outputs.
"""

_DATA = """# Data

Each folder under `data/` is one flow; `{dev}` is the development flow (`evaluate`
scores only it; the result is computed on the others).

- `snapshots.npy`: float64 array (5, 32, 32), the vorticity omega = dv/dx - du/dy at
  (x_i, y_j) = (2 pi i / 32, 2 pi j / 32), indexed [snapshot, i, j], with independent
  Gaussian noise on every value.
- `info.json`: `snapshot_times`, `forecast_times`, `viscosity`,
  `grid_points_per_side`, `noise_std` (the standard deviation of that noise; the
  held-out fields carry the same).
"""


def _modulation_family(params):
    """The hidden force as a law family with its strength traced (compiled once)."""
    from ....physics import fluid_solver as fs

    return fs.VorticityModulation(gamma=params[0], beta=MODULATION_BETA)


def _random_field(rng: np.random.Generator, n: int) -> np.ndarray:
    """A smooth random vorticity field: Fourier modes 1 <= |k| <= 4 with amplitudes
    falling as 1/|k| and random phases, scaled to RMS 1.5."""
    x = 2.0 * np.pi * np.arange(n) / n
    xx, yy = np.meshgrid(x, x, indexing="ij")
    field = np.zeros((n, n))
    for kx in range(-4, 5):
        for ky in range(0, 5):
            k = math.hypot(kx, ky)
            if k < 1 or k > 4 or (ky == 0 and kx < 0):
                continue
            field += rng.normal() / k * np.cos(kx * xx + ky * yy + rng.uniform(0, 2 * np.pi))
    field -= field.mean()
    return 1.5 * field / np.sqrt(np.mean(field**2))


class FluidForecast(Family):
    name = "fluid-forecast"
    version = "2"
    task_name = "Forecast a periodic flow under a hidden force"
    sub_domain = "fluid dynamics"
    domain = "physical modeling"
    task_type = "forecasting"
    sota_citation = ("Orszag 1971, J. Fluid Mech. 49, 75 (pseudo-spectral Navier-Stokes); "
                     "integrated from the last snapshot at the stated viscosity")
    tags = ("fluid dynamics", "forecasting", "hidden force", "naturegym")
    libraries = ("numpy", "scipy")
    metric = Metric("relative_l2_error", "",
                    "||forecast - truth||_2 / ||truth||_2 over both forecast times and all "
                    "grid points, the truth a held-out noisy field")
    sota_identifiers = ("simulate_from",)
    metric_function = "npy_relative_l2_error"
    metric_output = {"file": "forecast.npy"}
    readme = _README
    data_description = _DATA
    evaluation_instances = 1
    references = {
        "baseline": Reference("persistence", "the last snapshot repeated at every forecast "
                                             "time"),
        "sota": Reference("standard Navier-Stokes from the last snapshot",
                          "the incompressible Navier-Stokes equations at the stated "
                          "viscosity, integrated pseudo-spectrally (Lawson RK4, 2/3 "
                          "dealiasing; Orszag 1971) from the last snapshot on the data grid "
                          "(the mad suite's fluid solver)", SOLVER_VERSION),
        "bound": Reference("the noise-free truth",
                           "the simulated flow with the hidden force known; its error is "
                           "the noise of the held-out fields"),
    }

    def draw(self, rng: np.random.Generator) -> Draw:
        from ....physics import fluid_solver as fs

        gamma = float(rng.uniform(3.0, 8.0))
        omega0 = _random_field(rng, N_SIM)
        times = SNAPSHOT_TIMES + FORECAST_TIMES
        hats, _ = fs.simulate_family(fs.initial_hat(omega0), times, nu=VISCOSITY,
                                     family=_modulation_family, params=[gamma],
                                     factor=1.0 + gamma * MODULATION_BETA)
        step = N_SIM // N_DATA
        clean = np.stack([np.fft.irfft2(w, s=(N_SIM, N_SIM))[::step, ::step] for w in hats])
        if not np.all(np.isfinite(clean)):
            raise FloatingPointError("the simulation blew up")
        noise_std = NOISE_FRACTION * float(np.sqrt(np.mean(clean[0] ** 2)))
        noisy = clean + rng.normal(0.0, noise_std, clean.shape)
        observed, held = noisy[:len(SNAPSHOT_TIMES)], noisy[len(SNAPSHOT_TIMES):]
        persistence = np.stack([observed[-1]] * len(FORECAST_TIMES))
        hat = fs.initial_hat(observed[-1])
        solution = fs.simulate_from(hat, SNAPSHOT_TIMES[-1], FORECAST_TIMES, nu=VISCOSITY)
        sota = np.stack([np.fft.irfft2(w, s=(N_DATA, N_DATA)) for w in solution.omega_hat])
        info = {"snapshot_times": SNAPSHOT_TIMES, "forecast_times": FORECAST_TIMES,
                "viscosity": VISCOSITY, "grid_points_per_side": N_DATA,
                "noise_std": float(f"{noise_std:.6e}")}
        import json

        return Draw(
            data={"snapshots.npy": npy_bytes(observed),
                  "info.json": (json.dumps(info, sort_keys=True, indent=1) + "\n").encode()},
            truth={"forecast.npy": npy_bytes(held)},
            hidden={"modulation_gamma": gamma},
            outputs={"baseline": {"forecast.npy": npy_bytes(persistence)},
                     "sota": {"forecast.npy": npy_bytes(sota)},
                     "oracle": {"forecast.npy": npy_bytes(clean[len(SNAPSHOT_TIMES):])}},
            floor=NOISE_FRACTION)

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        snapshots = np.load(data_dir / "snapshots.npy", allow_pickle=False)
        return {"forecast.npy": npy_bytes(np.stack([snapshots[-1]] * len(FORECAST_TIMES)))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        snapshots = np.load(data_dir / "snapshots.npy", allow_pickle=False)
        return {"forecast.npy": npy_bytes(np.zeros((len(FORECAST_TIMES),
                                                    *snapshots.shape[1:])))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant (zero), the training mean field, and persistence (the last
        snapshot)."""
        snapshots = np.load(data_dir / "snapshots.npy", allow_pickle=False)
        repeat = len(FORECAST_TIMES)
        return {"constant": self.constant_outputs(data_dir),
                "training-mean": {"forecast.npy": npy_bytes(np.stack([snapshots.mean(0)]
                                                                     * repeat))},
                "persistence": {"forecast.npy": npy_bytes(np.stack([snapshots[-1]] * repeat))}}
