"""The frozen state-of-the-art methods of the shipped task packages.

Each method here was run once (on 2026-11-25, by the since retired
`tools/build_packages.py`); the figure it reached on each dataset is the record's S
(records/<package>.json), with its provenance. They are deliberately stronger than the
scripted `baseline` agent (suites/packages/baselines/solvers.py), whose figure is each
instance's B. `python -m discoverygym.suites.packages.frozen_sota PACKAGE`
reruns one on the shipped data and prints the figures beside the recorded ones.

Gravity packages: a full orbit fit. The relative orbit of the two stars is integrated
with the force law in question and its free parameters (law, strength, initial state)
are fitted to every observed position by nonlinear least squares, started from the
simple method's estimate. This is the maximum-likelihood estimate for Gaussian position
noise, the standard way orbits are measured (cf. orbit determination by differential
correction), and uses every sample rather than noisy second derivatives."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares
from scipy.signal import savgol_filter


def _relative(pos: np.ndarray) -> np.ndarray:
    return pos[:, 2:4] - pos[:, 0:2]


def _scaled(t: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Dimensionless time (0..1) and positions (first separation = 1), and the scales."""
    length, duration = float(np.hypot(*rel[0])), float(t[-1] - t[0])
    return (t - t[0]) / duration, rel / length, length, duration


def _initial_state(ts: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Position and velocity at the first sample from a local polynomial (scaled units)."""
    n = 15
    coef = [np.polyfit(ts[:n], xs[:n, k], 4) for k in range(2)]
    return np.array([np.polyval(coef[0], 0.0), np.polyval(coef[1], 0.0),
                     np.polyval(np.polyder(coef[0]), 0.0), np.polyval(np.polyder(coef[1]), 0.0)])


def _orbit(ts: np.ndarray, state0: np.ndarray, strength: float, alpha: float,
           drag_rate: float) -> np.ndarray:
    """Scaled relative orbit under a = -strength r / |r|^(3+alpha) - drag_rate v."""

    def rhs(_t, y):
        r = np.hypot(y[0], y[1])
        a = -strength / r ** (3.0 + alpha)
        return [y[2], y[3], a * y[0] - drag_rate * y[2], a * y[1] - drag_rate * y[3]]

    sol = solve_ivp(rhs, (0.0, ts[-1]), state0, t_eval=ts, method="DOP853",
                    rtol=1e-11, atol=1e-12)
    if not sol.success or sol.y.shape[1] != len(ts):
        return np.full((len(ts), 2), 1e3)
    return sol.y[:2].T


def _strength_guess(ts: np.ndarray, xs: np.ndarray, alpha: float) -> float:
    acc = savgol_filter(xs, 15, 4, deriv=2, delta=ts[1] - ts[0], axis=0)[10:-10]
    r = np.hypot(*xs[10:-10].T)
    return float(np.median(np.hypot(*acc.T) * r ** (2.0 + alpha)))


def fit_force_law_orbit(t: np.ndarray, pos: np.ndarray, alpha0: float) -> float:
    """alpha of F ∝ r^-(2+alpha) by a least-squares fit of the integrated relative orbit
    (parameters: strength, alpha, initial position and velocity), started at alpha0."""
    ts, xs, _, _ = _scaled(t, _relative(pos))
    x0 = np.concatenate([[np.log(_strength_guess(ts, xs, alpha0)), alpha0],
                         _initial_state(ts, xs)])

    def residual(p):
        return (_orbit(ts, p[2:], np.exp(p[0]), p[1], 0.0) - xs).ravel()

    return float(least_squares(residual, x0, x_scale="jac", xtol=1e-12, ftol=1e-12).x[1])


def fit_drag_orbit(t: np.ndarray, pos: np.ndarray, tau0_s: float) -> float:
    """tau of a Newtonian binary with drag a_i = -v_i / tau by a least-squares fit of the
    integrated relative orbit (parameters: strength, 1/tau, initial position and
    velocity), started at tau0_s."""
    ts, xs, _, duration = _scaled(t, _relative(pos))
    x0 = np.concatenate([[np.log(_strength_guess(ts, xs, 0.0)), duration / tau0_s],
                         _initial_state(ts, xs)])

    def residual(p):
        return (_orbit(ts, p[2:], np.exp(p[0]), 0.0, p[1]) - xs).ravel()

    rate = least_squares(residual, x0, x_scale="jac", xtol=1e-12, ftol=1e-12).x[1]
    return float(duration / rate)


RVPredictor = Callable[[np.ndarray, np.ndarray], np.ndarray]


def keplerian_refit(t: np.ndarray, rv: np.ndarray, err: np.ndarray, inst: np.ndarray,
                    t_ref: float, planets: list[dict], *, fit_periods: bool) -> RVPredictor:
    """Least-squares refit of Keplerian planets plus one offset per instrument, started
    from the given orbits (P, K, e, omega_rad, l_rad at t_ref; days, m/s). With
    `fit_periods=False` the periods stay at their starting values. The weights include a
    jitter term re-estimated from the residuals (three rounds). K is left free in sign
    (a negative K is the same orbit half a cycle on), which lets the fit leave a poor
    starting phase. Returns a function (times, instruments) -> predicted RV (m/s)."""
    from scipy.optimize import least_squares

    from ...physics.rv_kepler import rv_keplerian

    labels = sorted(set(inst))
    n_per = 5 if fit_periods else 4

    def model(x: np.ndarray, times: np.ndarray, insts: np.ndarray) -> np.ndarray:
        total = np.zeros(len(times))
        for k, p in enumerate(planets):
            par = x[n_per * k: n_per * (k + 1)]
            period = np.exp(np.clip(par[4], -3.0, 12.0)) if fit_periods else p["P"]
            k_ms, sqrt_e_cos, sqrt_e_sin, lam = par[:4]
            e = min(sqrt_e_cos**2 + sqrt_e_sin**2, 0.95)
            total += rv_keplerian(times, period, k_ms, e,
                                  np.arctan2(sqrt_e_sin, sqrt_e_cos), lam, t_ref)
        offsets = x[n_per * len(planets):]
        return total + np.array([offsets[labels.index(i)] for i in insts])

    x0: list[float] = []
    for p in planets:
        root_e = np.sqrt(p["e"])
        x0 += [p["K"], root_e * np.cos(p["omega_rad"]), root_e * np.sin(p["omega_rad"]),
               p["l_rad"]] + ([np.log(p["P"])] if fit_periods else [])
    x = np.array(x0 + [float(np.median(rv[inst == lab])) for lab in labels])
    jitter = 0.0
    for _ in range(3):  # alternate the fit and a jitter estimate from its residuals
        weight = 1.0 / np.sqrt(err**2 + jitter**2)
        x = least_squares(lambda v, w=weight: (model(v, t, inst) - rv) * w, x, method="lm").x
        resid = model(x, t, inst) - rv
        jitter = float(np.sqrt(max(np.mean(resid**2) - np.mean(err**2), 0.0)))
    return lambda times, insts: model(x, times, insts)


#: The published orbits the RV SOTA starts from (Stargazer's truths for these stars:
#: 51 Peg b, Butler et al. 2006; HD 69830 b, c, d, Lovis et al. 2006; HD 179949 b), with
#: t_ref in JD, and the source series whose first epoch is the data's time zero.
LITERATURE_ORBITS = {
    "system_a": ("51_Peg_real_001.csv", 2449610.532755, [
        {"P": 4.230785, "K": 54.04222496792409, "e": 0.013, "omega_rad": 1.0122909661567112,
         "l_rad": 4.644516025661992}]),
    "system_b": ("HD_69830_real_018.csv", 2452939.87402, [
        {"P": 8.667, "K": 3.6067738522092077, "e": 0.1, "omega_rad": 5.934119456780721,
         "l_rad": 4.3116845828145784},
        {"P": 31.56, "K": 2.6681937259972557, "e": 0.13, "omega_rad": 3.857177646907468,
         "l_rad": 5.269504713888937},
        {"P": 197.0, "K": 2.2070136310570123, "e": 0.07, "omega_rad": 3.9095375244672983,
         "l_rad": 5.787285633292294}]),
    "system_dev": ("HD_179949_real_009.csv", 2451002.072951, [
        {"P": 3.0925, "K": 110.7390528414362, "e": 0.022, "omega_rad": 3.351032163829113,
         "l_rad": 4.494807573504598}]),
}
PACKAGES = Path(__file__).resolve().parent
RV_SOURCES = PACKAGES / "records" / "sources" / "rv-holdout-forecast"


def _columns(path: Path) -> dict[str, list[str]]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: [r[k] for r in rows] for k in rows[0]}


def rv_sota(root: Path) -> dict[str, float]:
    """Held-out RMS (m/s) of the published orbits refitted to the training epochs,
    periods fixed or free, the better kept, per instance of rv-holdout-forecast."""
    out = {}
    for name, (source, t_ref, planets) in LITERATURE_ORBITS.items():
        t0 = min(float(v) for v in _columns(RV_SOURCES / source)["time_jd"])
        train = _columns(root / "problem/data" / name / "rv_train.csv")
        truth = _columns(root / "evaluation/ground_truth" / name / "predictions.csv")
        t, rv, err = (np.array(train[k], dtype=float) for k in ("time_days", "rv_ms", "err_ms"))
        scores = []
        for free in (False, True):
            predict = keplerian_refit(t, rv, err, np.array(train["instrument"]), t_ref - t0,
                                      planets, fit_periods=free)
            held = predict(np.array(truth["time_days"], dtype=float),
                           np.array(truth["instrument"]))
            scores.append(float(np.sqrt(np.mean((held - np.array(truth["rv_ms"], dtype=float))
                                                ** 2))))
        out[name] = min(scores)
    return out


def _trajectories(root: Path):
    for name in sorted(p.name for p in (root / "problem/data").iterdir()):
        table = np.loadtxt(root / "problem/data" / name / "trajectory.csv", delimiter=",",
                           skiprows=1)
        truth = json.loads((root / "evaluation/ground_truth" / name / "answer.json").read_text())
        yield name, table[:, 0], table[:, 1:], truth


def orbit_fit_sota(root: Path) -> dict[str, float]:
    """The full orbit fit's error per instance of gravity-force-law (|alpha error|) or
    binary-drag-timescale (relative tau error), started from the baseline's estimate."""
    from .baselines.solvers import drag_tau_s, force_law_alpha

    out = {}
    for name, t, pos, truth in _trajectories(root):
        if "alpha" in truth:
            out[name] = abs(fit_force_law_orbit(t, pos, force_law_alpha(t, pos)) - truth["alpha"])
        else:
            tau = fit_drag_orbit(t, pos, drag_tau_s(t, pos))
            out[name] = abs(tau - truth["tau_s"]) / truth["tau_s"]
    return out


def fluid_sota(root: Path) -> dict[str, float]:
    """Relative L2 error of standard Navier-Stokes from the last snapshot, zero-padded to
    128^2, per flow of fluid-vorticity-forecast."""
    from .baselines.solvers import fluid_forecast

    out = {}
    for name in sorted(p.name for p in (root / "problem/data").iterdir()):
        info = json.loads((root / "problem/data" / name / "info.json").read_text())
        snapshots = np.load(root / "problem/data" / name / "snapshots.npy")
        truth = np.load(root / "evaluation/ground_truth" / name / "forecast.npy")
        forecast = fluid_forecast(snapshots, info["snapshot_times"], info["forecast_times"],
                                  info["viscosity"], resolution=2 * snapshots.shape[-1])
        out[name] = float(np.linalg.norm(forecast.astype(np.float32) - truth)
                          / np.linalg.norm(truth))
    return out


# ---- the real series of statsmodels' datasets ----------------------------------------
def _series(root: Path, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = root / "problem" / "data" / name
    table = np.loadtxt(data / "series.csv", delimiter=",", skiprows=1, ndmin=2)
    query = np.loadtxt(data / "query.csv", delimiter=",", skiprows=1, ndmin=1)
    return table[:, 0], table[:, 1], query


def yule_ar2_forecast(values: np.ndarray, horizon: int) -> np.ndarray:
    """Yule's model of the sunspot numbers (Yule 1927, Phil. Trans. R. Soc. A 226:267):
    an autoregression of order two with a constant, fitted by least squares
    (statsmodels AutoReg), iterated `horizon` steps ahead."""
    from statsmodels.tsa.ar_model import AutoReg

    fit = AutoReg(np.asarray(values, float), lags=2, trend="c").fit()
    return np.asarray(fit.predict(start=len(values), end=len(values) + horizon - 1))


def harmonic_trend_forecast(t: np.ndarray, values: np.ndarray, t_query: np.ndarray,
                            degree: int = 2, harmonics: int = 4) -> np.ndarray:
    """The function of Thoning, Tans & Komhyr 1989 (J. Geophys. Res. 94:8549) for the
    Mauna Loa CO2 record: a quadratic trend plus four annual harmonics, fitted by least
    squares and extrapolated (their filtered residuals are left out: they do not
    extrapolate)."""
    t0 = float(np.mean(t))

    def design(x: np.ndarray) -> np.ndarray:
        cols = [(x - t0) ** k for k in range(degree + 1)]
        for k in range(1, harmonics + 1):
            cols += [np.cos(2 * np.pi * k * x), np.sin(2 * np.pi * k * x)]
        return np.stack(cols, axis=1)

    beta = np.linalg.lstsq(design(t), values, rcond=None)[0]
    return design(np.asarray(t_query, float)) @ beta


def _rms_against_truth(root: Path, name: str, forecast: np.ndarray) -> float:
    truth = np.loadtxt(root / "evaluation/ground_truth" / name / "forecast.csv",
                       delimiter=",", skiprows=1, ndmin=2)
    return float(np.sqrt(np.mean((forecast - truth[:, 1]) ** 2)))


def _instances(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "problem" / "data").iterdir() if p.is_dir())


def sunspot_sota(root: Path) -> dict[str, float]:
    out = {}
    for name in _instances(root):
        _, values, query = _series(root, name)
        out[name] = _rms_against_truth(root, name, yule_ar2_forecast(values, len(query)))
    return out


def co2_sota(root: Path) -> dict[str, float]:
    out = {}
    for name in _instances(root):
        t, values, query = _series(root, name)
        out[name] = _rms_against_truth(root, name, harmonic_trend_forecast(t, values, query))
    return out


RERUN = {"gravity-force-law": orbit_fit_sota, "binary-drag-timescale": orbit_fit_sota,
         "rv-holdout-forecast": rv_sota, "fluid-vorticity-forecast": fluid_sota,
         "sunspot-cycle-forecast": sunspot_sota, "mauna-loa-co2-forecast": co2_sota}


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in RERUN:
        sys.exit(f"usage: python -m {__spec__.name} {{{','.join(RERUN)}}}")
    package = sys.argv[1]
    recorded = json.loads((PACKAGES / "records" / f"{package}.json").read_text())["S"]
    for name, value in RERUN[package](PACKAGES / "catalog" / package).items():
        print(f"{name}: rerun {value:.6g}, recorded {float(recorded[name]['value']):.6g}")
