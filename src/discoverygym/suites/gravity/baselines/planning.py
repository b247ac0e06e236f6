"""Observation planning for the gravity suite's scripted experts: where in time to
spend a budget of position measurements. Times are in the world's display units."""

from __future__ import annotations

from typing import Any

import numpy as np

GOLDEN_FRACTION = 0.6180339887498949


def uniform_times(window: tuple[float, float], count: int) -> np.ndarray:
    """`count` equally spaced times covering the window, both ends included."""
    return np.linspace(window[0], window[1], count)


def coarse_times(window: tuple[float, float], count: int) -> np.ndarray:
    """`count` times spread evenly but irregularly over the window (a golden-ratio
    sequence), sorted. Irregular spacing removes the aliases that equally spaced
    samples leave in a period search."""
    fractions = np.mod(0.5 + GOLDEN_FRACTION * np.arange(count), 1.0)
    return np.sort(window[0] + (window[1] - window[0]) * fractions)


def cluster_times(centre: float, spacing: float, size: int,
                  window: tuple[float, float]) -> np.ndarray:
    """`size` times `spacing` apart centred on `centre`, shifted to lie in the window."""
    offsets = spacing * (np.arange(size) - (size - 1) / 2)
    times = centre + offsets
    if times[0] < window[0]:
        times += window[0] - times[0]
    if times[-1] > window[1]:
        times -= times[-1] - window[1]
    return np.clip(times, window[0], window[1])


def spread_picks(times: np.ndarray, score: np.ndarray, count: int,
                 min_gap: float) -> np.ndarray:
    """Indices of up to `count` samples with the highest score, at least `min_gap`
    apart in time (so clusters land on different orbits)."""
    chosen: list[int] = []
    for i in np.argsort(-score):
        if all(abs(times[i] - times[j]) >= min_gap for j in chosen):
            chosen.append(int(i))
        if len(chosen) == count:
            break
    return np.array(chosen, dtype=int)


def passage_zooms(orbit: Any, window: tuple[float, float], time_to_s: float,
                  count: int) -> list[np.ndarray]:
    """Dense looks at one periastron and one apoastron passage of a fitted bound orbit
    (a `kepler_model.KeplerOrbit`), the ones nearest the middle of the window: they
    pin down the eccentricity and the time of periastron. The periastron look spans
    two local timescales r_p^2 / h each side, the apoastron look a tenth of a period."""
    lo, hi = window[0] * time_to_s, window[1] * time_to_s
    rp = orbit.semi_major_axis_m * (1 - orbit.eccentricity)
    periastron_width = 2 * rp**2 / np.sqrt(orbit.gm * orbit.semi_latus_rectum_m)
    zooms = []
    for passages, width in ((orbit.periastron_times(lo, hi), periastron_width),
                            (orbit.apoastron_times(lo, hi), 0.1 * orbit.period_s)):
        if len(passages) == 0:
            continue
        centre = passages[np.argmin(np.abs(passages - 0.5 * (lo + hi)))]
        times = np.linspace(centre - width, centre + width, count) / time_to_s
        zooms.append(np.clip(times, *window))
    return zooms


def batches(times: np.ndarray, per_call: int) -> list[list[float]]:
    """Split times into observe calls of at most `per_call` values."""
    values = [float(t) for t in times]
    return [values[i:i + per_call] for i in range(0, len(values), per_call)]
