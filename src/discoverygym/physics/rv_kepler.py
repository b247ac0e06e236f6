"""Keplerian radial-velocity model.

Convention (used by the generator, the evaluator and the agents alike):
mean anomaly M(t) = M0 + 2 pi (t - t_ref) / P, with the phase given as the mean
longitude l = omega + M0 at t_ref; true anomaly nu from Kepler's equation
E - e sin E = M (`physics.kepler`); RV(t) = K [cos(nu + omega) + e cos(omega)] (m/s)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .kepler import TWO_PI, true_anomaly

# RV semi-amplitude of a 1 MJup companion on a 1-yr circular edge-on orbit around 1 Msun.
K_JUPITER_MS = 28.4329


def rv_keplerian(t_days: ArrayLike, P_days: float, K_ms: float, e: float, omega_rad: float,
                 l_rad: float, t_ref_days: float) -> NDArray[np.float64]:
    """RV of one planet (m/s) at times t (days), phase as mean longitude at t_ref."""
    t = np.asarray(t_days, dtype=float)
    mean_anom = (l_rad - omega_rad) + TWO_PI * (t - t_ref_days) / P_days
    nu = true_anomaly(mean_anom, e)
    return K_ms * (np.cos(nu + omega_rad) + e * np.cos(omega_rad))


def semi_amplitude_ms(m_sin_i_mjup: float, star_mass_msun: float, P_days: float,
                      e: float) -> float:
    """K (m/s) for a planet of minimum mass m sin i (MJup), in the m_p << M* limit."""
    return (K_JUPITER_MS * m_sin_i_mjup * star_mass_msun ** (-2.0 / 3.0)
            * (P_days / 365.25) ** (-1.0 / 3.0) / np.sqrt(1.0 - e * e))


def m_sin_i_mjup(K_ms: float, star_mass_msun: float, P_days: float, e: float) -> float:
    """Inverse of `semi_amplitude_ms`."""
    return K_ms / semi_amplitude_ms(1.0, star_mass_msun, P_days, e)


# ---- several planets at once ------------------------------------------------------
# A planet set is an (N, 5) float array with columns PLANET_COLUMNS; the same layout is
# used by the generator, the evaluator and the real-system refits.
PLANET_COLUMNS = ("P_days", "K_ms", "e", "omega_rad", "l_rad")


def rv_curves(t_days: ArrayLike, planets: ArrayLike, t_ref_days: float) -> NDArray[np.float64]:
    """Single-planet RV curves (m/s), shape (N, len(t)), for an (N, 5) planet array with
    columns PLANET_COLUMNS. Vectorised over planets and epochs."""
    t = np.asarray(t_days, dtype=float)
    p = np.asarray(planets, dtype=float).reshape(-1, 5)
    if p.shape[0] == 0:
        return np.zeros((0, t.size))
    period, k, ecc, omega, lam = (p[:, i:i + 1] for i in range(5))
    mean_anom = (lam - omega) + TWO_PI * (t[None, :] - t_ref_days) / period
    nu = true_anomaly(mean_anom, ecc)
    return k * (np.cos(nu + omega) + ecc * np.cos(omega))


def rv_total(t_days: ArrayLike, planets: ArrayLike, t_ref_days: float) -> NDArray[np.float64]:
    """Sum of the Keplerian signals of all planets (m/s) at times t (days)."""
    return rv_curves(t_days, planets, t_ref_days).sum(axis=0)


def mean_longitude_from_periastron(tp_days: float, P_days: float, omega_rad: float,
                                   t_ref_days: float) -> float:
    """Mean longitude l = omega + M0 (rad, in [0, 2 pi)) at t_ref for a planet whose
    periastron passage is at tp (days)."""
    m0 = TWO_PI * (t_ref_days - tp_days) / P_days
    return float(np.mod(omega_rad + m0, TWO_PI))
