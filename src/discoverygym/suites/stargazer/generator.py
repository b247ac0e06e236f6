"""Synthetic RV tasks: each one a pure function of an integer seed.

All randomness (system, schedule, activity GP, noise) comes from one
`numpy.random.default_rng(seed)`, drawn in a fixed order. A system whose exact truth
fails the detection gate (the rms and bic criteria of both scoring modes, applied to the
truth itself with the true jitter) is rejected and redrawn from the same generator, so
the result still depends on the seed alone. Every record is scored in both modes, so a
task must be solvable in both: otherwise a v1 pass rate would mix the agent's failures
with the published rule's own (its rms gate ignores jitter and other instruments' noise).

Priors (the published ones; see the suite README):
  M* ~ U(0.7, 1.3) Msun; N ~ {1,2,3,4} with p = (0.5, 0.3, 0.15, 0.05);
  inner P log-uniform [2, 300] d; each next planet with p = 0.3 near 2:1, 3:2 or 5:3
  (x N(1, 0.02)), else log-uniform [1.3 P_prev, 300]; systems with a ratio < 1.1 redrawn;
  m sin i log-uniform [0.01, 1] MJup; e ~ Beta(0.867, 3.03) capped at 0.9; omega, l ~ U(0, 2pi);
  sigma_w = 10^U(-0.3, 0.7) m/s (quoted); jitter |N(0, 0.5)| m/s (not quoted);
  p = 0.4 activity: celerite2 RotationTerm(sigma = 0.5 10^U(-1, 0.5), period log-U[10, 45],
  Q0 = 0.5 + 10^U(-1, 0.7), dQ = 10^U(-1.3, 0.3), f = U(0.1, 0.9));
  40..80 epochs uniform over U(2, 4) x the inner period.
Ours (the spec leaves them open): 1, 2 or 3 instruments with p = (0.7, 0.2, 0.1), each
with its own sigma_w and jitter from the priors above and an offset U(-20, 20) m/s,
observing consecutive blocks of epochs (at least 10 each)."""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from celerite2 import terms
from scipy.linalg import cholesky

from ...physics.rv_kepler import rv_total, semi_amplitude_ms
from .difficulty import count_resonances, difficulty, tier_of
from .scoring import RULES, fit_statistics
from .task import RVTask

N_PLANETS_P = (0.5, 0.3, 0.15, 0.05)
P_MIN_DAYS, P_MAX_DAYS = 2.0, 300.0
RESONANCE_P = 0.3
MIN_NEXT_RATIO = 1.3
MIN_RATIO = 1.1
N_INSTRUMENTS_P = (0.7, 0.2, 0.1)
OFFSET_RANGE_MS = 20.0
MIN_EPOCHS_PER_INSTRUMENT = 10
MJUP_MSUN = 9.547919e-4
MAX_DRAWS = 1000
# Bumped whenever a seed's task changes (priors, gate, draw order): keys the bank caches.
GENERATOR_VERSION = 2


def instrument_labels(n: int) -> list[str]:
    """inst_A, inst_B, ..."""
    return [f"inst_{string.ascii_uppercase[i]}" for i in range(n)]


def _log_uniform(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def draw_periods(rng: np.random.Generator, n: int) -> list[float] | None:
    """Periods (days) by the published prior; None if the system must be redrawn."""
    periods = [_log_uniform(rng, P_MIN_DAYS, P_MAX_DAYS)]
    for _ in range(n - 1):
        prev = periods[-1]
        if rng.uniform() < RESONANCE_P:
            ratio = float(rng.choice([2.0, 1.5, 5.0 / 3.0])) * rng.normal(1.0, 0.02)
            if ratio < MIN_NEXT_RATIO:
                return None
            periods.append(prev * ratio)
        else:
            lo = MIN_NEXT_RATIO * prev
            if lo >= P_MAX_DAYS:
                return None
            periods.append(_log_uniform(rng, lo, P_MAX_DAYS))
    ratios = np.diff(np.log(periods))
    if np.any(np.exp(ratios) < MIN_RATIO):
        return None
    return periods


def activity_sample(rng: np.random.Generator, t_days: np.ndarray, sigma_ms: float,
                    period_days: float, q0: float, dq: float, f: float) -> np.ndarray:
    """One draw of the celerite2 RotationTerm GP at times t (m/s), from `rng`: the dense
    covariance's Cholesky factor times standard normals (celerite2's own `sample`
    uses the global numpy state, which we never touch)."""
    term = terms.RotationTerm(sigma=sigma_ms, period=period_days, Q0=q0, dQ=dq, f=f)
    cov = term.to_dense(t_days, np.full(t_days.size, 1e-10 * sigma_ms ** 2 + 1e-12))
    chol = cholesky(cov, lower=True)
    return chol @ rng.standard_normal(t_days.size)


def nbody_rv_ms(t_days: np.ndarray, star_mass_msun: float, planets: np.ndarray,
                masses_mjup: np.ndarray, t_ref_days: float) -> np.ndarray:
    """Stellar RV (m/s) from a REBOUND integration of a coplanar edge-on system whose
    osculating Jacobi elements at t_ref are the given (N, 5) planets (P, K, e, omega, l)
    with true masses `masses_mjup`. Sign convention as kepler.rv_keplerian."""
    import rebound

    au_per_day_ms = 1.495978707e11 / 86400.0
    sim = rebound.Simulation()
    sim.units = ("day", "AU", "Msun")
    sim.add(m=star_mass_msun)
    for (period, _k, ecc, omega, lam), mass in zip(planets, masses_mjup, strict=True):
        sim.add(m=float(mass) * MJUP_MSUN, P=float(period), e=float(ecc), inc=np.pi / 2,
                Omega=0.0, omega=float(omega), l=float(lam))
    sim.move_to_com()
    sim.integrator = "ias15"
    sim.t = float(t_ref_days)
    out = np.empty(t_days.size)
    for i in np.argsort(t_days):
        sim.integrate(float(t_days[i]), exact_finish_time=1)
        out[i] = -sim.particles[0].vz * au_per_day_ms
    return out


def _draw_system(rng: np.random.Generator, nbody: bool) -> dict[str, Any] | None:
    star_mass = rng.uniform(0.7, 1.3)
    n_planets = int(rng.choice([1, 2, 3, 4], p=N_PLANETS_P))
    periods = draw_periods(rng, n_planets)
    if periods is None:
        return None
    msini = np.array([_log_uniform(rng, 0.01, 1.0) for _ in range(n_planets)])
    ecc = np.minimum(rng.beta(0.867, 3.03, size=n_planets), 0.9)
    omega = rng.uniform(0, 2 * np.pi, size=n_planets)
    lam = rng.uniform(0, 2 * np.pi, size=n_planets)
    k_ms = np.array([semi_amplitude_ms(m, star_mass, p, e)
                     for m, p, e in zip(msini, periods, ecc, strict=True)])
    planets = np.column_stack([periods, k_ms, ecc, omega, lam])

    n_inst = int(rng.choice([1, 2, 3], p=N_INSTRUMENTS_P))
    sigma_w = 10.0 ** rng.uniform(-0.3, 0.7, size=n_inst)
    jitter = np.abs(rng.normal(0.0, 0.5, size=n_inst))
    offsets = rng.uniform(-OFFSET_RANGE_MS, OFFSET_RANGE_MS, size=n_inst)

    activity = None
    if rng.uniform() < 0.4:
        activity = {"sigma_ms": 0.5 * 10.0 ** rng.uniform(-1, 0.5),
                    "period_days": _log_uniform(rng, 10.0, 45.0),
                    "Q0": 0.5 + 10.0 ** rng.uniform(-1, 0.7),
                    "dQ": 10.0 ** rng.uniform(-1.3, 0.3),
                    "f": rng.uniform(0.1, 0.9)}

    n_obs = int(rng.integers(40, 81))
    baseline = rng.uniform(2.0, 4.0) * periods[0]
    times = np.sort(rng.uniform(0.0, baseline, size=n_obs))
    # consecutive blocks of epochs per instrument, each at least MIN_EPOCHS_PER_INSTRUMENT
    spare = n_obs - n_inst * MIN_EPOCHS_PER_INSTRUMENT
    cuts = np.sort(rng.integers(0, spare + 1, size=n_inst - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [spare]])) + MIN_EPOCHS_PER_INSTRUMENT
    inst_index = np.repeat(np.arange(n_inst), sizes)

    t_ref = float(times[0])
    resonant = count_resonances(periods) > 0
    if nbody and resonant:
        signal = nbody_rv_ms(times, star_mass, planets, msini, t_ref)
        engine = "rebound"
    else:
        signal = rv_total(times, planets, t_ref)
        engine = "keplerian"
    if activity is not None:
        signal = signal + activity_sample(rng, times, activity["sigma_ms"],
                                          activity["period_days"], activity["Q0"],
                                          activity["dQ"], activity["f"])
    noise_sd = np.sqrt(sigma_w[inst_index] ** 2 + jitter[inst_index] ** 2)
    rv = signal + noise_sd * rng.standard_normal(n_obs) + offsets[inst_index]

    gp_sigma = None if activity is None else activity["sigma_ms"]
    rubric = difficulty(periods, k_ms, float(np.mean(sigma_w[inst_index])),
                        float(np.mean(jitter[inst_index])), baseline, n_obs, gp_sigma)
    extra_var = jitter[inst_index] ** 2 + (0.0 if gp_sigma is None else gp_sigma ** 2)
    return {"star_mass": float(star_mass), "planets": planets, "msini": msini,
            "times": times, "rv": rv, "err": sigma_w[inst_index].copy(),
            "instrument": np.array(instrument_labels(n_inst))[inst_index],
            "jitter": jitter, "offsets": offsets, "sigma_w": sigma_w, "activity": activity,
            "extra_var": extra_var, "rubric": rubric, "engine": engine,
            "baseline_days": float(baseline)}


def truth_is_detectable(task: RVTask) -> bool:
    """The gate: the exact truth (with the true jitter) passes the rms and bic criteria
    of every scoring mode (v1 and v2)."""
    stats = fit_statistics(task.context(), task.truth, task.truth_jitter_ms)
    return all(rule(stats).criteria["rms"] and rule(stats).criteria["bic"]
               for rule in RULES.values())


def generate_task(seed: int, *, task_id: str | None = None, nbody: bool = False) -> RVTask:
    """The synthetic task of `seed` (deterministic). `nbody=True` replaces the Keplerian
    signal of resonant systems by a REBOUND N-body signal (the truth stays the osculating
    elements at t_ref, so the Keplerian model is then slightly misspecified)."""
    rng = np.random.default_rng(seed)
    for draw in range(MAX_DRAWS):
        system = _draw_system(rng, nbody)
        if system is None:
            continue
        level = system["rubric"]["difficulty"]
        task = RVTask(
            task_id=task_id or f"seed-{seed}", tier=tier_of(level), source="synthetic",
            star_mass_msun=system["star_mass"], times_days=system["times"],
            rv_ms=system["rv"], err_ms=system["err"], instrument=system["instrument"],
            truth=system["planets"], truth_jitter_ms=system["jitter"],
            extra_var_ms2=system["extra_var"], seed=int(seed), difficulty=system["rubric"],
            meta={"engine": system["engine"], "activity": system["activity"],
                  "offsets_ms": system["offsets"].tolist(),
                  "sigma_white_ms": system["sigma_w"].tolist(),
                  "m_sin_i_mjup": system["msini"].tolist(), "redraws": draw,
                  "baseline_days": system["baseline_days"]})
        if truth_is_detectable(task):
            return task
    raise RuntimeError(f"seed {seed}: no detectable system in {MAX_DRAWS} draws")
