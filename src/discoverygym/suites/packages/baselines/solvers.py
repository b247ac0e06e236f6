"""Scripted baselines for the shipped task packages.

`baseline` recognises a package by its task name and runs that package's classical
method on DATA_DIR, writing answers with the `write_file` tool and asking for one
evaluation. For a package it does not know, it writes nothing and finishes (an honest
failure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ....core import EpisodeView


def _trajectory(data_dir: Path, instance: str) -> tuple[np.ndarray, np.ndarray]:
    table = np.loadtxt(data_dir / "data" / instance / "trajectory.csv", delimiter=",",
                       skiprows=1)
    return table[:, 0], table[:, 1:5]


def force_law_alpha(t: np.ndarray, pos: np.ndarray) -> float:
    """|a_rel| ∝ r^-(2+alpha): Savitzky-Golay accelerations, log-log slope."""
    from scipy.signal import savgol_filter

    rel = pos[:, 2:4] - pos[:, 0:2]
    acc = savgol_filter(rel, 15, 4, deriv=2, delta=t[1] - t[0], axis=0)[10:-10]
    slope = np.polyfit(np.log(np.hypot(*rel[10:-10].T)), np.log(np.hypot(*acc.T)), 1)[0]
    return float(-slope - 2.0)


def drag_tau_s(t: np.ndarray, pos: np.ndarray) -> float:
    """Linear drag makes the relative orbit's angular momentum decay as exp(-t/tau)."""
    rel = pos[:, 2:4] - pos[:, 0:2]
    vel = np.gradient(rel, t, axis=0)
    h = rel[:, 0] * vel[:, 1] - rel[:, 1] * vel[:, 0]
    slope = np.polyfit(t[5:-5], np.log(np.abs(h[5:-5])), 1)[0]
    return float(-1.0 / slope)


def _solve_force_law(view: EpisodeView, data: Path, instances: list[str]) -> None:
    for name in instances:
        alpha = force_law_alpha(*_trajectory(data, name))
        view.call("write_file", {"path": f"{name}/answer.json",
                                 "content": json.dumps({"alpha": alpha})})


def _solve_drag(view: EpisodeView, data: Path, instances: list[str]) -> None:
    for name in instances:
        tau = drag_tau_s(*_trajectory(data, name))
        view.call("write_file", {"path": f"{name}/answer.json",
                                 "content": json.dumps({"tau_s": tau})})


def rv_forecast(train_csv: Path, query_csv: Path) -> list[tuple[float, str, float]]:
    """Greedy periodogram + Keplerian search (the stargazer classical fitter), planet
    count by BIC, then the model with per-instrument offsets at the query epochs."""
    import csv

    from ....physics.rv_fit import RVData, SearchSettings, greedy_search, select_by_bic
    from ....physics.rv_kepler import rv_keplerian

    rows = list(csv.DictReader(train_csv.open()))
    data = RVData.from_arrays([float(r["time_days"]) for r in rows],
                              [float(r["rv_ms"]) for r in rows],
                              [float(r["err_ms"]) for r in rows], [r["instrument"] for r in rows])
    settings = SearchSettings(period_range=(1.1, 2.0 * max(data.baseline_days, 10.0)),
                              max_planets=4, delta_bic=10.0, extra_planets=0)
    fits = greedy_search(data, settings)
    fit = fits[select_by_bic(fits, data.n, delta_bic=10.0)]
    out = []
    for q in csv.DictReader(query_csv.open()):
        t = float(q["time_days"])
        rv = sum(float(rv_keplerian(t, p.P_days, p.K_ms, p.e, p.omega_rad, p.l_rad,
                                    data.t_ref_days)) for p in fit.planets)
        label = q["instrument"]
        offset = fit.offsets_ms[data.inst_labels.index(label)] if label in data.inst_labels \
            else 0.0
        out.append((t, label, rv + float(offset)))
    return out


def _solve_rv(view: EpisodeView, data: Path, instances: list[str]) -> None:
    for name in instances:
        rows = rv_forecast(data / "data" / name / "rv_train.csv", data / "data" / name / "query.csv")
        text = "time_days,instrument,rv_ms\n" + "".join(f"{t:.6f},{lab},{rv:.5f}\n"
                                                         for t, lab, rv in rows)
        view.call("write_file", {"path": f"{name}/predictions.csv", "content": text})


def fluid_forecast(snapshots: np.ndarray, snapshot_times: list[float],
                   forecast_times: list[float], viscosity: float,
                   resolution: int = 128) -> np.ndarray:
    """Vorticity forecast (len(forecast_times), n, n) on the data's n x n grid: the last
    snapshot's Fourier modes, zero-padded to `resolution` (finer than the data, so the
    cascade to small scales is resolved), integrated with the standard incompressible
    Navier-Stokes equations at the stated viscosity (the mad suite's JAX solver), read
    back at the grid points."""
    from ....physics import fluid_solver as fs

    n = snapshots.shape[-1]
    if resolution % n or resolution < n:
        raise ValueError("resolution must be a multiple of the data's grid size")
    coarse_hat = np.fft.rfft2(np.asarray(snapshots[-1], dtype=float))
    half = n // 2
    fine_hat = np.zeros((resolution, resolution // 2 + 1), dtype=complex)
    # Modes |k| < n/2 carry over (scaled for the finer FFT); the Nyquist row/column is
    # ambiguous on the coarse grid and is dropped.
    scale = (resolution / n) ** 2
    fine_hat[:half, :half] = coarse_hat[:half, :half] * scale
    fine_hat[resolution - half + 1:, :half] = coarse_hat[half + 1:, :half] * scale
    fine_hat = np.where(fs.SpectralGrid(resolution).dealias_mask(), fine_hat, 0.0)
    fine_hat[0, 0] = 0.0
    solution = fs.simulate_from(fine_hat, float(snapshot_times[-1]), list(forecast_times),
                                nu=viscosity)
    step = resolution // n
    return np.stack([np.fft.irfft2(w, s=(resolution, resolution))[::step, ::step]
                     for w in solution.omega_hat])


def _solve_fluid(view: EpisodeView, data: Path, instances: list[str]) -> None:
    import base64
    import io

    for name in instances:
        folder = data / "data" / name
        info = json.loads((folder / "info.json").read_text())
        snapshots = np.load(folder / "snapshots.npy")
        # On the data's own grid: the simpler method. The SOTA refines to 128^2.
        forecast = fluid_forecast(snapshots, info["snapshot_times"], info["forecast_times"],
                                  info["viscosity"], resolution=snapshots.shape[-1])
        buffer = io.BytesIO()
        np.save(buffer, forecast.astype(np.float32))
        view.call("write_file", {"path": f"{name}/forecast.npy",
                                 "content": base64.b64encode(buffer.getvalue()).decode(),
                                 "encoding": "base64"})


SUNSPOT_TASK = "Forecast the yearly mean number of sunspots"
CO2_TASK = "Forecast the weekly carbon dioxide concentration at a remote station"


def _series_forecast(view: EpisodeView, data: Path, instances: list[str], columns: str,
                     forecast: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
                     ) -> None:
    """Write each instance's forecast.csv from `forecast(t, values, t_query)`."""
    for name in instances:
        folder = data / "data" / name
        table = np.loadtxt(folder / "series.csv", delimiter=",", skiprows=1, ndmin=2)
        query = np.loadtxt(folder / "query.csv", delimiter=",", skiprows=1, ndmin=1)
        values = forecast(table[:, 0], table[:, 1], query)
        text = columns + "\n" + "".join(f"{t:.6f},{float(v)!r}\n" for t, v in zip(query, values,
                                                                             strict=True))
        view.call("write_file", {"path": f"{name}/forecast.csv", "content": text})


def last_value_forecast(t: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Persistence: the last observed value carried forward (sunspots' baseline)."""
    return np.full(len(query), float(values[-1]))


def linear_trend_forecast(t: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """A straight line fitted by least squares and extrapolated (CO2's baseline)."""
    slope, intercept = np.polyfit(t - t.mean(), values, 1)
    return slope * (query - t.mean()) + intercept


def _solve_sunspots(view: EpisodeView, data: Path, instances: list[str]) -> None:
    _series_forecast(view, data, instances, "year,sunspots", last_value_forecast)


def _solve_co2(view: EpisodeView, data: Path, instances: list[str]) -> None:
    _series_forecast(view, data, instances, "decimal_year,co2_ppm", linear_trend_forecast)


SOLVERS: dict[str, Callable[[EpisodeView, Path, list[str]], None]] = {
    "Infer the force law of an altered-gravity binary": _solve_force_law,
    "Measure the drag timescale of a decaying binary": _solve_drag,
    "Forecast held-out radial velocities of planet-hosting stars": _solve_rv,
    "Forecast the vorticity of two periodic flows": _solve_fluid,
    SUNSPOT_TASK: _solve_sunspots,
    CO2_TASK: _solve_co2,
}


def _generated(task_name: str, role: str
               ) -> Callable[[EpisodeView, Path, list[str]], None] | None:
    """For a NatureGym-generated package: its family's `baseline` or `constant` outputs,
    written per instance through `write_file`."""
    import base64

    from ....naturegym.families import family_for_task

    family = family_for_task(task_name)
    if family is None:
        return None
    make = family.baseline_outputs if role == "baseline" else family.constant_outputs

    def solve(view: EpisodeView, data: Path, instances: list[str]) -> None:
        for name in instances:
            for filename, content in make(data / "data" / name).items():
                view.call("write_file", {"path": f"{name}/{filename}", "encoding": "base64",
                                         "content": base64.b64encode(content).decode()})

    return solve


class Baseline:
    """The classical method of each shipped package."""

    def solve(self, view: EpisodeView) -> None:
        ws = view.workspace()
        solver = SOLVERS.get(ws["task_name"]) or _generated(ws["task_name"], "baseline")
        if solver is not None:
            solver(view, Path(ws["DATA_DIR"]), list(ws["instances"]))
            view.call("evaluate", {})
        view.call("submit", {})


AGENTS = {"baseline": "discoverygym.suites.packages.baselines.solvers:Baseline"}
