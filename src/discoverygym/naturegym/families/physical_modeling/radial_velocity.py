"""Radial velocity of an active star: recover the planet's signal.

A star with one planet, quasi-periodic rotation activity and granulation, observed at
random epochs over 150 days with 1 m/s errors. The agent recovers the planet's reflex
velocity (the Keplerian alone, zero on average over an orbit: no offset, no activity)
on a fixed grid of epochs over the observing window. The truth is that noise-free
signal, so an oracle that knows the planet scores 0.

- baseline: a periodogram peak and a least-squares Keplerian (no activity model);
- state of the art: Keplerian plus quasi-periodic GP by maximum likelihood (Haywood et
  al. 2014 with celerite, Foreman-Mackey et al. 2017), `physics.rv_activity`, its
  Keplerian part;
- oracle (the bound): the true planet.

Version 3 (issue #34): version 2 asked for the noisy RV at held-out epochs, whose
stellar activity no method can predict: the oracle given the true planet, kernel and
noise scored g = 0.01-0.1 while the recorded "bound" (the noise-free signal) claimed
0.5-0.65. The planet's signal is what the science wants and has real headroom."""

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
ERROR_MS = 1.0
#: The epochs of the planet's signal: the same grid for every star (nothing drawn).
T_QUERY = np.linspace(0.0, SPAN_DAYS, 61)
HEADER = ["time_days", "planet_rv_ms"]

_README = """# Recover the planet's signal in the radial velocity of an active star

## Scientific problem

A star is observed spectroscopically at irregular epochs. Its radial velocity carries
the reflex motion of one orbiting companion, and the star's own surface (spots,
convection) adds signals of its own. Each measurement has a stated uncertainty.

## Task objective

For each star, give the companion's contribution to the radial velocity (its reflex
motion alone, which averages to zero over one orbit: no systemic offset and no stellar
signal) at the epochs of `query.csv`.

## Dataset information

`data/<star>/rv.csv`: time (days), radial velocity and its uncertainty (m/s);
`data/<star>/query.csv`: the epochs at which to give the companion's signal. See
`data_description.md`.

## Evaluation metrics

Root-mean-square error of the given signal against the companion's true reflex
velocity at the query epochs (lower is better), compared with a reference value per
star.

## Output format

For each star write `<OUTPUT_DIR>/<star>/planet.csv` with the header
`time_days,planet_rv_ms` and one row per query epoch, in the order of `query.csv`.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a time that is not the
query's or a non-finite value counts as a failure for that star. You may ask for an
evaluation of your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one star; `{{dev}}` is the development star (`evaluate`
scores only it; the result is computed on the others).

- `rv.csv`: columns `time_days,rv_ms,err_ms`, {N_EPOCHS} epochs in time order over
  {SPAN_DAYS:.0f} days.
- `query.csv`: column `time_days`, {len(T_QUERY)} evenly spaced epochs over the same
  window.
"""


class RadialVelocityActivity(Family):
    name = "rv-activity-forecast"
    version = "3"
    task_name = "Recover the planet signal in the radial velocity of an active star"
    sub_domain = "exoplanets"
    domain = "physical modeling"
    task_type = "regression"
    sota_citation = ("Haywood et al. 2014, MNRAS 443, 2517; Foreman-Mackey et al. 2017, "
                     "AJ 154, 220 (Keplerian + quasi-periodic Gaussian process)")
    tags = ("radial velocity", "stellar activity", "signal separation", "naturegym")
    libraries = ("numpy", "scipy", "astropy", "celerite2")
    metric = Metric("rms_error_ms", "m/s",
                    "RMS of the given minus the true planet reflex velocity over the query "
                    "epochs")
    sota_identifiers = ("fit_keplerian_gp",)
    metric_output = {"file": "planet.csv", "key": "time_days", "values": ["planet_rv_ms"]}
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("periodogram + Keplerian",
                              "the strongest Lomb-Scargle peak refined by a weighted "
                              "least-squares Keplerian with an offset; no activity model"),
        "sota": Reference("Keplerian + quasi-periodic Gaussian process",
                          "a Keplerian and a quasi-periodic GP (celerite2 RotationTerm) "
                          "with jitter, fitted together by maximum likelihood from the two "
                          "strongest periodogram peaks; its Keplerian is the planet's signal "
                          "(Haywood et al. 2014; Foreman-Mackey et al. "
                          "2017; physics.rv_activity.fit_keplerian_gp)", RV_GP_FIT_VERSION),
        "bound": Reference("the oracle: the true planet",
                           "the planet's true orbit, played through the evaluator; it "
                           "scores 0 (the truth is the noise-free planet signal)"),
    }

    def _simulate(self, rng: np.random.Generator) -> dict:
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

        def planet(times: np.ndarray) -> np.ndarray:
            return keplerian_rv(times, hidden["period_days"], hidden["semi_amplitude_ms"],
                                hidden["eccentricity"], hidden["omega_rad"],
                                hidden["phase_rad"])

        rv = planet(t) + sample_activity(kernel, t, rng)
        noisy = np.round(rv + rng.normal(0.0, ERROR_MS, len(t)), 5)
        err = np.full(len(t), ERROR_MS)
        data = {"rv.csv": csv_bytes(["time_days", "rv_ms", "err_ms"], [t, noisy, err],
                                    "{:.5f}"),
                "query.csv": csv_bytes(["time_days"], [T_QUERY], "{:.5f}")}
        return {"t": t, "rv": noisy, "err": err, "hidden": hidden, "data": data,
                "planet": planet(T_QUERY)}

    def draw_data(self, rng: np.random.Generator) -> Draw:
        sim = self._simulate(rng)
        return Draw(sim["data"], {}, sim["hidden"], {}, 0.0)

    def draw(self, rng: np.random.Generator) -> Draw:
        sim = self._simulate(rng)
        t, rv, err = sim["t"], sim["rv"], sim["err"]
        baseline = fit_keplerian(t, rv, err).planet(T_QUERY)
        sota = fit_keplerian_gp(t, rv, err).planet(T_QUERY)
        return Draw(
            data=sim["data"], truth=_answer(sim["planet"]), hidden=sim["hidden"],
            outputs={"baseline": _answer(baseline), "sota": _answer(sota, FULL_PRECISION),
                     "oracle": _answer(sim["planet"])},
            floor=0.0)

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        data = read_csv_columns(data_dir / "rv.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        fit = fit_keplerian(data["time_days"], data["rv_ms"], data["err_ms"])
        return _answer(fit.planet(t_query), times=t_query)

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        return _answer(np.zeros_like(t_query), times=t_query)

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant (zero), the training mean, persistence (the last earlier
        measurement) and nearest-neighbour (the measurement closest in time), each
        less the mean (the signal averages to zero)."""
        data = read_csv_columns(data_dir / "rv.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        t, rv = data["time_days"], data["rv_ms"] - data["rv_ms"].mean()
        earlier = np.clip(np.searchsorted(t, t_query) - 1, 0, len(t) - 1)
        nearest = np.abs(t[None, :] - t_query[:, None]).argmin(axis=1)
        return {"constant": self.constant_outputs(data_dir),
                "training-mean": _answer(np.full_like(t_query, data["rv_ms"].mean()),
                                         times=t_query),
                "persistence": _answer(rv[earlier], times=t_query),
                "nearest-neighbour": _answer(rv[nearest], times=t_query)}


def _answer(values: np.ndarray, fmt: str = "{:.5f}", times: np.ndarray | None = None
            ) -> dict[str, bytes]:
    times = T_QUERY if times is None else times
    return {"planet.csv": csv_bytes(HEADER, [times, values], fmt)}
