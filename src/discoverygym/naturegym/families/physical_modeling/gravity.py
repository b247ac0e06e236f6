"""Two gravity families: a binary under an altered force law, and a binary with drag.

The agent sees the relative orbit of a binary (noisy positions at even times over 500
days, two to six orbits) and forecasts the positions at later query times. The truth is
the held-out noisy observations, so the metric has a floor: the noise level.

- generator: `physics.orbit_fit.relative_orbit` (DOP853) under a = -mu r/r^(3+alpha)
  (force law) or a = -mu r/r^3 - v/tau (drag);
- baseline: a fixed Keplerian ellipse fitted by least squares;
- state of the art: a Keplerian ellipse with secular element rates (semi-major axis,
  periapsis, mean motion drifting at constant rates) fitted by least squares, the
  secular-rate timing model of binary pulsars (Blandford & Teukolsky 1976; Damour &
  Deruelle 1986), reimplemented and frozen in `physics.orbit_fit` (version below);
- bound: the oracle, the noise-free orbit (the law and every parameter known), which
  scores the noise level itself.

Version 3 draws every nuisance value independently (issue #34's leaks: the noise level
was the orbit size times 0.002, the time grid 2.5 periods long, every orbit started at
periapsis at t = 0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....physics.orbit_fit import (
    ORBIT_FIT_VERSION,
    fit_kepler,
    forecast_kepler,
    relative_orbit,
)
from ..base import FULL_PRECISION, Draw, Family, Metric, Reference, csv_bytes, read_csv_columns

N_OBSERVED = 120
N_QUERY = 40
#: The time grid is the same for every system (a grid drawn from the period would give
#: the period away): observations over 500 days, forecasts from 520 to 1000 days.
OBSERVED_DAYS = 500.0
FORECAST_DAYS = (520.0, 1000.0)
T_OBSERVED = np.linspace(0.0, OBSERVED_DAYS, N_OBSERVED)
T_QUERY = np.linspace(*FORECAST_DAYS, N_QUERY)
PERIOD_DAYS = (80.0, 220.0)  # 2.3 to 6 orbits observed
#: position noise per coordinate (au), drawn independently of the orbit's size
NOISE_AU = (1e-3, 4e-3)

HEADER = ["time_days", "x_au", "y_au"]

_README = """# Forecast the orbit of a binary

## Scientific problem

{problem}

## Task objective

For each system, forecast the relative position of the binary at the query times.

## Dataset information

`data/<system>/observations.csv`: the relative position (x_au, y_au) of the second
star with respect to the first, at evenly spaced times (days), each coordinate with
independent Gaussian noise of the stated standard deviation; `data/<system>/query.csv`:
the times to forecast; `data/<system>/info.json`: the noise level. See
`data_description.md`.

## Evaluation metrics

Root-mean-square error of the forecast coordinates against held-out observations at
the query times, which carry the same noise as the data (lower is better), compared
with a reference value per system.

## Output format

For each system write `<OUTPUT_DIR>/<system>/forecast.csv` with the header
`time_days,x_au,y_au` and one row per query time, in the order of `query.csv`.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a time that is not the
query's or a non-finite value counts as a failure for that system. You may ask for an
evaluation of your current outputs.
"""

_DATA = """# Data

Each folder under `data/` is one system; `{dev}` is the development system (`evaluate`
scores only it; the result is computed on the others).

- `observations.csv`: columns `time_days,x_au,y_au`, {n_obs} rows.
- `query.csv`: column `time_days`, {n_query} rows, all after the last observation.
- `info.json`: `position_noise_au`, the standard deviation of the noise on each
  coordinate (the held-out observations carry the same noise).
"""


class _Binary(Family):
    sub_domain = "celestial mechanics"
    domain = "physical modeling"
    task_type = "forecasting"
    sota_citation = ("Blandford & Teukolsky 1976, ApJ 205, 580; Damour & Deruelle 1986, "
                     "Ann. Inst. Henri Poincare 44, 263 (secular-rate timing model)")
    libraries = ("numpy", "scipy")
    metric = Metric("rms_error_au", "au",
                    "RMS over both coordinates and every query time of forecast minus the "
                    "held-out noisy observation")
    sota_identifiers = ("fit_kepler", "forecast_kepler")
    metric_output = {"file": "forecast.csv", "key": "time_days", "values": ["x_au", "y_au"]}
    problem = ""
    references = {
        "baseline": Reference("fixed Keplerian ellipse",
                              "a Keplerian ellipse (size, eccentricity, periapsis, phase, "
                              "mean motion) fitted by least squares and propagated"),
        "sota": Reference("Keplerian ellipse with secular element rates",
                          "the secular-rate timing model of binary pulsars (Blandford & "
                          "Teukolsky 1976; Damour & Deruelle 1986): semi-major axis, "
                          "periapsis and mean motion drifting at constant rates, fitted "
                          "by least squares (physics.orbit_fit.fit_kepler, secular=True)",
                          ORBIT_FIT_VERSION),
        "bound": Reference("the noise-free truth",
                           "the simulated orbit with the law and every parameter known; "
                           "its error is the noise of the held-out observations"),
    }

    @property
    def readme(self) -> str:  # type: ignore[override]
        return _README.format(problem=self.problem)

    data_description = _DATA.format(dev="{dev}", n_obs=N_OBSERVED, n_query=N_QUERY)

    def law(self, rng: np.random.Generator, period_days: float) -> dict[str, float]:
        raise NotImplementedError

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        obs = read_csv_columns(data_dir / "observations.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        positions = np.column_stack([obs["x_au"], obs["y_au"]])
        forecast = forecast_kepler(fit_kepler(obs["time_days"], positions, secular=False),
                                   t_query)
        return {"forecast.csv": csv_bytes(HEADER, [t_query, forecast[:, 0], forecast[:, 1]])}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        zero = np.zeros_like(t_query)
        return {"forecast.csv": csv_bytes(HEADER, [t_query, zero, zero])}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant (the origin), the training mean position, and persistence (the last
        observed position); nearest-neighbour in time is persistence here."""
        obs = read_csv_columns(data_dir / "observations.csv")
        t_query = read_csv_columns(data_dir / "query.csv")["time_days"]
        ones = np.ones_like(t_query)

        def answer(x: float, y: float) -> dict[str, bytes]:
            return {"forecast.csv": csv_bytes(HEADER, [t_query, x * ones, y * ones])}

        return {"constant": self.constant_outputs(data_dir),
                "training-mean": answer(obs["x_au"].mean(), obs["y_au"].mean()),
                "persistence": answer(obs["x_au"][-1], obs["y_au"][-1])}

    def _simulate(self, rng: np.random.Generator) -> dict:
        """One system: hidden values, the noise-free and the noisy positions. Every
        nuisance value is drawn on its own, so nothing visible follows from a hidden
        value: the time grid is the same for every system, the noise level is drawn
        independently of the orbit's size, and the orbit passed periapsis at a random
        time before the first observation (the leak gate checks this)."""
        a_au = rng.uniform(0.5, 2.0)
        e = rng.uniform(0.1, 0.5)
        period_days = rng.uniform(*PERIOD_DAYS)
        law = self.law(rng, period_days)
        alpha, drag_rate = law.get("alpha", 0.0), law.get("drag_rate_per_day", 0.0)
        mu = 4.0 * np.pi**2 * a_au**3 / period_days**2 * a_au**alpha
        r_peri = a_au * (1.0 - e)
        v_peri = np.sqrt(mu / r_peri ** (1.0 + alpha) * (1.0 + e))
        angle = rng.uniform(0.0, 2.0 * np.pi)
        sense = rng.choice([-1.0, 1.0])
        periapsis_time = -rng.uniform(0.0, period_days)  # the last passage before t = 0
        sigma = rng.uniform(*NOISE_AU)
        state0 = np.array([r_peri * np.cos(angle), r_peri * np.sin(angle),
                           -sense * v_peri * np.sin(angle), sense * v_peri * np.cos(angle)])
        t_all = np.concatenate([T_OBSERVED, T_QUERY])
        clean = relative_orbit(t_all, state0, mu, alpha, drag_rate, t0=periapsis_time)
        noisy = clean + rng.normal(0.0, sigma, clean.shape)
        # what the agent and the evaluator read is the formatted text: round through it
        noisy = np.array([[float(f"{v:.9e}") for v in row] for row in noisy])
        hidden = {"semi_major_axis_au": a_au, "eccentricity": e, "period_days": period_days,
                  "mu_au3_per_day2": mu, **law, "start_angle_rad": angle,
                  "orbit_sense": sense, "periapsis_time_days": periapsis_time}
        data = {"observations.csv": csv_bytes(HEADER, [T_OBSERVED, noisy[:N_OBSERVED, 0],
                                                       noisy[:N_OBSERVED, 1]]),
                "query.csv": csv_bytes(["time_days"], [T_QUERY]),
                "info.json": f'{{"position_noise_au": {sigma:.6e}}}\n'.encode()}
        return {"hidden": hidden, "data": data, "clean": clean, "noisy": noisy,
                "sigma": sigma}

    def draw_data(self, rng: np.random.Generator) -> Draw:
        sim = self._simulate(rng)
        return Draw(sim["data"], {}, sim["hidden"], {}, sim["sigma"])

    def draw(self, rng: np.random.Generator) -> Draw:
        sim = self._simulate(rng)
        obs, held = sim["noisy"][:N_OBSERVED], sim["noisy"][N_OBSERVED:]
        baseline = forecast_kepler(fit_kepler(T_OBSERVED, obs, secular=False), T_QUERY)
        sota = forecast_kepler(fit_kepler(T_OBSERVED, obs, secular=True), T_QUERY)

        def forecast(values: np.ndarray, fmt: str = "{:.9e}") -> dict[str, bytes]:
            return {"forecast.csv": csv_bytes(HEADER, [T_QUERY, values[:, 0], values[:, 1]],
                                              fmt)}

        return Draw(
            data=sim["data"],
            truth={"forecast.csv": forecast(held)["forecast.csv"]},
            hidden=sim["hidden"],
            outputs={"baseline": forecast(baseline), "sota": forecast(sota, FULL_PRECISION),
                     "oracle": forecast(sim["clean"][N_OBSERVED:], FULL_PRECISION)},
            floor=sim["sigma"])


class GravityForceLaw(_Binary):
    name = "gravity-force-law"
    version = "3"
    task_name = "Forecast a binary under an unknown force law"
    tags = ("gravity", "forecasting", "altered gravity", "naturegym")
    problem = ("Two stars orbit each other in isolation. Their mutual attraction is "
               "central and depends only on their separation, but it need not follow "
               "the inverse-square law exactly. Nothing else acts on them.")

    def law(self, rng: np.random.Generator, period_days: float) -> dict[str, float]:
        return {"alpha": float(rng.choice([-1.0, 1.0]) * rng.uniform(0.01, 0.05))}


class GravityDrag(_Binary):
    name = "gravity-drag"
    version = "3"
    task_name = "Forecast a binary losing energy"
    tags = ("gravity", "forecasting", "dissipation", "naturegym")
    problem = ("Two stars orbit each other under Newtonian gravity while moving through "
               "a medium that may slow them down. The form and strength of any such "
               "force are not stated.")

    def law(self, rng: np.random.Generator, period_days: float) -> dict[str, float]:
        return {"drag_rate_per_day": float(1.0 / (rng.uniform(40.0, 150.0) * period_days))}
