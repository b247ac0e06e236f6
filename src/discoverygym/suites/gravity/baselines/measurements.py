"""What the gravity experts measure on a table of positions: tracks in SI units,
local-polynomial derivatives, refined extrema, whole-orbit weights and small fits.
Pure functions, arrays in and numbers out; nothing here knows which world it sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

POSITION_COLUMNS = ("star1_x", "star1_y", "star1_z", "star2_x", "star2_y", "star2_z")
DAY_S = 86400.0
TARGET_PERIOD_S = 21 * DAY_S  # the period asked for by multiply_mass_period
VIRIAL_TOLERANCE = 1e-3  # the task's own criterion: |2<K> + <U>| <= 0.1 % of |<U>|
# A fixed ellipse reproduces a Newtonian orbit to the interpolation accuracy of the
# data (~1e-6 of the orbit size); a precessing or decaying orbit misses by percents.
KEPLER_RESIDUAL_TOLERANCE = 1e-3
# Relative change of the angular momentum over the data above which the orbit is
# dissipative (the drag worlds lose tens of percent; numerical noise is ~1e-6).
CONSERVATION_TOLERANCE = 1e-3
# Separation exponent of the force: -2 for Newton; the modified worlds sit 0.03 away.
INVERSE_SQUARE_TOLERANCE = 0.01


@dataclass(frozen=True)
class Track:
    """Positions of both stars at sorted, distinct times (SI: s and m)."""

    time_s: np.ndarray  # (N,)
    star1_m: np.ndarray  # (N, 3)
    star2_m: np.ndarray  # (N, 3)

    @property
    def relative_m(self) -> np.ndarray:
        """Separation vector star2 - star1, (N, 3) in m."""
        return self.star2_m - self.star1_m

    @property
    def separation_m(self) -> np.ndarray:
        return np.linalg.norm(self.relative_m, axis=1)

    def __len__(self) -> int:
        return len(self.time_s)


def track_from_table(table: pd.DataFrame, units: dict[str, Any]) -> Track:
    """Convert a table in display units (columns time, star1_x, ..., star2_z) to an SI
    `Track`: sorted by time, repeated times merged (their rows averaged)."""
    if len(table) == 0:
        raise ValueError("the table has no rows")
    frame = table[["time", *POSITION_COLUMNS]].astype(float)
    frame = frame.groupby("time", sort=True).mean().reset_index()
    time_s = frame["time"].to_numpy() * float(units["time_to_s"])
    xyz = frame[list(POSITION_COLUMNS)].to_numpy() * float(units["length_to_m"])
    return Track(time_s=time_s, star1_m=xyz[:, :3], star2_m=xyz[:, 3:])


def local_polynomial_derivatives(time_s: np.ndarray, values: np.ndarray, width: int = 7,
                                 degree: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """First and second time derivatives of `values` (N, D) at each sample, from a
    least-squares polynomial of `degree` through the `width` nearest samples in
    index (centred where possible). Works for uneven time steps."""
    n = len(time_s)
    width = min(width, n)
    degree = min(degree, width - 1)
    start = np.clip(np.arange(n) - width // 2, 0, n - width)
    idx = start[:, None] + np.arange(width)[None, :]
    dt = time_s[idx] - time_s[:, None]
    scale = np.max(np.abs(dt), axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    x = dt / scale
    vander = x[:, :, None] ** np.arange(degree + 1)[None, None, :]
    coeffs = np.linalg.pinv(vander) @ values[idx]  # (N, degree+1, D)
    first = coeffs[:, 1, :] / scale
    second = 2.0 * coeffs[:, 2, :] / scale**2 if degree >= 2 else np.zeros_like(first)
    return first, second


def refine_extremum(time_s: np.ndarray, values: np.ndarray, i: int) -> tuple[float, float]:
    """Time and value of the extremum of `values` near sample `i`: the vertex of the
    parabola through samples i-1, i, i+1 (the sample itself at an edge)."""
    if i <= 0 or i >= len(values) - 1:
        return float(time_s[i]), float(values[i])
    t = time_s[i - 1:i + 2] - time_s[i]
    coeffs = np.polyfit(t, values[i - 1:i + 2], 2)
    if coeffs[0] == 0:
        return float(time_s[i]), float(values[i])
    vertex = -coeffs[1] / (2 * coeffs[0])
    vertex = float(np.clip(vertex, t[0], t[2]))
    return float(time_s[i] + vertex), float(np.polyval(coeffs, vertex))


def interior_extrema(time_s: np.ndarray, values: np.ndarray,
                     kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Refined (times, values) of the interior local minima (kind='min') or maxima."""
    sign = 1.0 if kind == "min" else -1.0
    y = sign * values
    inner = np.arange(1, len(y) - 1)
    is_ext = (y[inner] <= y[inner - 1]) & (y[inner] < y[inner + 1])
    found = [refine_extremum(time_s, values, int(i)) for i in inner[is_ext]]
    if not found:
        return np.empty(0), np.empty(0)
    times, vals = np.array(found).T
    return times, vals


def passage_period(times: np.ndarray) -> float | None:
    """Period from a series of passage times (some may be missing): slope of the
    passage time against its orbit number."""
    if len(times) < 2:
        return None
    gaps = np.diff(times)
    guess = float(np.min(gaps[gaps > 0.5 * np.median(gaps)]))
    number = np.round((times - times[0]) / guess)
    if number[-1] == 0:
        return None
    slope, _ = np.polyfit(number, times, 1)
    return float(slope)


def whole_orbit_weights(time_s: np.ndarray, start_s: float, end_s: float) -> np.ndarray:
    """Trapezoid weights for a time average over [start_s, end_s] using the samples
    inside it (zero weight outside)."""
    inside = (time_s >= start_s) & (time_s <= end_s)
    w = np.zeros(len(time_s))
    t = time_s[inside]
    if len(t) < 2:
        w[inside] = 1.0
        return w / w.sum()
    local = np.zeros(len(t))
    local[:-1] += 0.5 * np.diff(t)
    local[1:] += 0.5 * np.diff(t)
    w[inside] = local
    return w / w.sum()


def eggleton_roche_radius(separation_m: float, mass_ratio: float) -> float:
    """Roche-lobe radius (Eggleton 1983) of the star whose mass over the companion's is
    `mass_ratio`, for a binary of semi-major axis `separation_m` (m)."""
    q23 = mass_ratio ** (2.0 / 3.0)
    return separation_m * 0.49 * q23 / (0.6 * q23 + np.log1p(mass_ratio ** (1.0 / 3.0)))


def fit_exponential_decay(time_s: np.ndarray, values: np.ndarray) -> float:
    """e-folding time (s) of a quantity decaying as exp(-t / tau): a line through
    log(values) against time."""
    slope, _ = np.polyfit(time_s, np.log(values), 1)
    return float(-1.0 / slope) if slope < 0 else float("inf")


def fit_power_law_exponent(separation_m: np.ndarray, acceleration: np.ndarray) -> float:
    """Slope of log(acceleration) against log(separation) (-2 for Newtonian gravity)."""
    slope, _ = np.polyfit(np.log(separation_m), np.log(acceleration), 1)
    return float(slope)


def fit_drift(time_s: np.ndarray, points_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Straight line R0 + V t through points (N, 3): returns (R0 in m, V in m/s)."""
    design = np.column_stack([np.ones_like(time_s), time_s])
    coeffs = scaled_lstsq(design, points_m)
    return coeffs[0], coeffs[1]


def scaled_lstsq(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares with unit-norm columns: seconds (~1e9) next to metres (~1e12) next
    to ones would otherwise cost several digits."""
    norms = np.linalg.norm(design, axis=0)
    norms[norms == 0] = 1.0
    coeffs, *_ = np.linalg.lstsq(design / norms, target, rcond=None)
    return coeffs / (norms[:, None] if coeffs.ndim == 2 else norms)
