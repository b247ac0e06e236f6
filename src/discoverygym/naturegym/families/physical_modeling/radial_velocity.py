"""Radial-velocity forecast with stellar activity.

A star with one planet, quasi-periodic rotation activity and granulation, observed at
random epochs over 150 days with 1 m/s errors; a quarter of the epochs are held out at
random and the agent forecasts them. The truth is the held-out noisy RVs, so the metric
has a floor (the 1 m/s noise).

- baseline: a periodogram peak and a least-squares Keplerian (no activity model);
- state of the art: Keplerian plus quasi-periodic GP by maximum likelihood (Haywood et
  al. 2014 with celerite, Foreman-Mackey et al. 2017), `physics.rv_activity`;
- bound: the noise-free truth (planet and activity realisation known)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....physics.rv_activity import (
    RV_GP_FIT_VERSION,
    activity_terms,
    fit_keplerian,
    fit_keplerian_gp,
    keplerian_rv,
    sample_activity,
)
from ..base import FULL_PRECISION, Draw, Family, Metric, Reference, csv_bytes, read_csv_columns

N_EPOCHS = 120
SPAN_DAYS = 150.0
HELD_OUT = 0.25
ERROR_MS = 1.0

_README = """# Forecast the radial velocity of an active star

## Scientific problem

A star is observed spectroscopically at irregular epochs. Its radial velocity carries
the reflex motion of an orbiting companion, and the star's own surface (spots,
convection) adds signals of its own. Each measurement has a stated uncertainty.

## Task objective

For each star, forecast the radial velocity at the query epochs, which fall between
and among the observed ones.

## Dataset information

`data/<star>/rv.csv`: time (days), radial velocity and its uncertainty (m/s);
`data/<star>/query.csv`: the epochs to forecast. See `data_description.md`.

## Evaluation metrics

Root-mean-square error of the forecast against the held-out measurements at the query
epochs, which carry the same measurement noise as the data (lower is better), compared
with a reference value per star.

## Output format

For each star write `<OUTPUT_DIR>/<star>/forecast.csv` with the header
`time_days,rv_ms` and one row per query epoch, in the order of `query.csv`.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a time that is not the
query's or a non-finite value counts as a failure for that star. You may ask for an
evaluation of your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one star; `{{dev}}` is the development star (`evaluate`
scores only it; the result is computed on the others).

- `rv.csv`: columns `time_days,rv_ms,err_ms`, the observed epochs in time order.
- `query.csv`: column `time_days`, the held-out epochs (about {HELD_OUT:.0%} of all).
"""


class RadialVelocityActivity(Family):
    name = "rv-activity-forecast"
    version = "2"
    task_name = "Forecast the radial velocity of an active planet host"
    sub_domain = "exoplanets"
    domain = "physical modeling"
    task_type = "forecasting"
    sota_citation = ("Haywood et al. 2014, MNRAS 443, 2517; Foreman-Mackey et al. 2017, "
                     "AJ 154, 220 (Keplerian + quasi-periodic Gaussian process)")
    tags = ("radial velocity", "stellar activity", "forecasting", "naturegym")
    libraries = ("numpy", "scipy", "astropy", "celerite2")
    metric = Metric("rms_error_ms", "m/s",
                    "RMS of forecast minus the held-out noisy radial velocity over the query "
                    "epochs")
    sota_identifiers = ("fit_keplerian_gp",)
    metric_output = {"file": "forecast.csv", "key": "time_days", "values": ["rv_ms"]}
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("periodogram + Keplerian",
                              "the strongest Lomb-Scargle peak refined by a weighted "
                              "least-squares Keplerian with an offset; no activity model"),
        "sota": Reference("Keplerian + quasi-periodic Gaussian process",
                          "a Keplerian and a quasi-periodic GP (celerite2 RotationTerm) "
                          "with jitter, fitted together by maximum likelihood from the two "
                          "strongest periodogram peaks, forecasting with the GP's "
                          "conditional mean (Haywood et al. 2014; Foreman-Mackey et al. "
                          "2017; physics.rv_activity.fit_keplerian_gp)", RV_GP_FIT_VERSION),
        "bound": Reference("the noise-free truth",
                           "the planet's orbit and the activity realisation known; its "
                           "error is the measurement noise of the held-out epochs"),
    }

    def draw(self, rng: np.random.Generator) -> Draw:
        t = np.sort(np.round(rng.uniform(0.0, SPAN_DAYS, N_EPOCHS), 4))
        if np.any(np.diff(t) <= 0):
            raise ValueError("repeated epoch")
        hidden = {
            "period_days": float(np.exp(rng.uniform(np.log(3.0), np.log(40.0)))),
            "semi_amplitude_ms": float(rng.uniform(4.0, 15.0)),
            "eccentricity": float(rng.uniform(0.0, 0.3)),
            "omega_rad": float(rng.uniform(0.0, 2.0 * np.pi)),
            "phase_rad": float(rng.uniform(0.0, 2.0 * np.pi)),
            "rotation_sigma_ms": float(rng.uniform(3.0, 8.0)),
            "rotation_period_days": float(rng.uniform(10.0, 35.0)),
            "rotation_q0": float(rng.uniform(0.5, 2.0)),
            "rotation_dq": float(rng.uniform(1.0, 5.0)),
            "rotation_f": float(rng.uniform(0.1, 0.9)),
            "granulation_sigma_ms": float(rng.uniform(0.8, 2.0)),
            "granulation_rho_days": float(rng.uniform(0.3, 1.0)),
        }
        kernel = activity_terms(*(hidden[k] for k in (
            "rotation_sigma_ms", "rotation_period_days", "rotation_q0", "rotation_dq",
            "rotation_f", "granulation_sigma_ms", "granulation_rho_days")))
        clean = keplerian_rv(t, hidden["period_days"], hidden["semi_amplitude_ms"],
                             hidden["eccentricity"], hidden["omega_rad"],
                             hidden["phase_rad"]) + sample_activity(kernel, t, rng)
        noisy = np.round(clean + rng.normal(0.0, ERROR_MS, len(t)), 5)
        held = rng.random(len(t)) < HELD_OUT
        held[0] = held[-1] = False  # forecast among the observations, not beyond them
        train, test = ~held, held
        err = np.full(len(t), ERROR_MS)
        baseline = fit_keplerian(t[train], noisy[train], err[train])(t[test])
        sota = fit_keplerian_gp(t[train], noisy[train], err[train])(t[test])

        def forecast(values: np.ndarray, fmt: str = "{:.5f}") -> dict[str, bytes]:
            return {"forecast.csv": csv_bytes(["time_days", "rv_ms"], [t[test], values], fmt)}
        return Draw(
            data={"rv.csv": csv_bytes(["time_days", "rv_ms", "err_ms"],
                                      [t[train], noisy[train], err[train]], "{:.5f}"),
                  "query.csv": csv_bytes(["time_days"], [t[test]], "{:.5f}")},
            truth={"forecast.csv": csv_bytes(["time_days", "rv_ms"],
                                             [t[test], noisy[test]], "{:.5f}")},
            hidden=hidden,
            outputs={"baseline": forecast(baseline), "sota": forecast(sota, FULL_PRECISION),
                     "oracle": forecast(clean[test], FULL_PRECISION)},
            floor=ERROR_MS)

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        data = read_csv_columns(data_dir / "rv.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        predict = fit_keplerian(data["time_days"], data["rv_ms"], data["err_ms"])
        return {"forecast.csv": csv_bytes(["time_days", "rv_ms"],
                                          [t_query, predict(t_query)], "{:.5f}")}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        return {"forecast.csv": csv_bytes(["time_days", "rv_ms"],
                                          [t_query, np.zeros_like(t_query)], "{:.5f}")}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant (zero), the training mean, persistence (the last earlier
        measurement) and nearest-neighbour (the measurement closest in time)."""
        data = read_csv_columns(data_dir / "rv.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        t, rv = data["time_days"], data["rv_ms"]
        earlier = np.clip(np.searchsorted(t, t_query) - 1, 0, len(t) - 1)
        nearest = np.abs(t[None, :] - t_query[:, None]).argmin(axis=1)

        def answer(values: np.ndarray) -> dict[str, bytes]:
            return {"forecast.csv": csv_bytes(["time_days", "rv_ms"], [t_query, values],
                                              "{:.5f}")}

        return {"constant": self.constant_outputs(data_dir),
                "training-mean": answer(np.full_like(t_query, rv.mean())),
                "persistence": answer(rv[earlier]), "nearest-neighbour": answer(rv[nearest])}
