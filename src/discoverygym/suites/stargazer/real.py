"""Real systems: 20 anonymised tasks built from published RV data.

Each task's data are one normalised CSV shipped in `data/real/` (time_jd, rv_ms, err_ms,
instrument; copied from the project's RV collection, see the README for the sources).
Agents see them anonymised: times shifted so the first epoch is day 0, each instrument's
median RV subtracted, instruments relabelled inst_A, inst_B, ... in order of first
appearance and kept separate.

The truth of each task is a refit of the data that starts at the literature orbit:
phases grid-searched planet by planet, then scipy least squares over (P, K, sqrt(e) cos
omega, sqrt(e) sin omega, l) per planet and one offset per instrument, alternating with
a maximum-likelihood jitter per instrument. The refits are computed once by
`python -m discoverygym.suites.stargazer.real` and stored in `data/real_systems.json`;
a refit that departs from the literature beyond the sanity bounds below is not used and
the literature orbit (with refit phases) is kept instead."""

from __future__ import annotations

import json
import math
import string
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import least_squares, minimize_scalar

from ...physics.rv_kepler import mean_longitude_from_periastron, rv_curves
from .task import RVTask

TWO_PI = 2.0 * math.pi
N_ITER = 4
# sanity bounds of an accepted refit relative to the literature orbit
MAX_REL_PERIOD_SHIFT = 0.05
MAX_ECC = 0.9
MAX_K_RATIO = 2.0          # refit K within a factor 2 of the literature K
MAX_ECC_SHIFT = 0.3        # refit e within 0.3 of the literature e
CIRCULAR_SQRT_E = 1e-4     # bound on sqrt(e) cos/sin omega of circular literature orbits


@dataclass(frozen=True)
class RealSystem:
    """One real task: its data file, star, and the literature planets to start from."""

    task_id: str
    system: str
    csv: str
    star_mass_msun: float
    star_mass_source: str
    planet_index: tuple[int, ...] | None = None   # which literature planets (None: all)
    # planets of the literature solution missing from the transcription (start values)
    extra_planets: tuple[dict[str, Any], ...] = ()
    note: str = ""


# Stellar masses (Msun): the values of the published task files (config.star.M_star_sun).
SYSTEMS = (
    RealSystem("real-001", "51_Peg", "51_Peg/stargazer_real_001.csv", 1.11, "Stargazer"),
    RealSystem("real-002", "55_Cnc", "55_Cnc/stargazer_real_002.csv", 0.95, "Stargazer"),
    RealSystem("real-003", "GJ_581", "GJ_581/stargazer_real_003.csv", 0.31, "Stargazer"),
    RealSystem("real-004", "GJ_876", "GJ_876/stargazer_real_004.csv", 0.334, "Stargazer",
               note="a deliberate trap: a 2:1 resonant chain whose orbits precess over the "
                    "data; sums of fixed Keplerians are misspecified"),
    RealSystem("real-005", "HD_10180", "HD_10180/stargazer_real_005.csv", 1.06, "Stargazer",
               (1, 2, 3, 4, 5)),
    RealSystem("real-006", "HD_10180", "HD_10180/stargazer_real_006.csv", 1.06, "Stargazer"),
    RealSystem("real-007", "HD_12661", "HD_12661/stargazer_real_007.csv", 1.07, "Stargazer"),
    # the published task merged two instruments (HARPS and CORALIE) under one label; we use
    # the same Benedict et al. (2022) table with its four instruments kept apart
    RealSystem("real-008", "HD_160691", "HD_160691/romanorbits_benedict2022.csv", 1.08,
               "Stargazer"),
    RealSystem("real-009", "HD_179949", "HD_179949/stargazer_real_009.csv", 1.24, "Stargazer"),
    RealSystem("real-010", "HD_189733", "HD_189733/stargazer_real_010.csv", 0.823,
               "Stargazer"),
    RealSystem("real-011", "HD_20794", "HD_20794/stargazer_real_011.csv", 0.70, "Stargazer"),
    RealSystem("real-012", "HD_209458", "HD_209458/stargazer_real_012.csv", 1.148,
               "Stargazer"),
    # the transcription lists planets b and c only; Delisle et al. (2018) report four
    # (d at 10.86 d, e at 25.2 d; circular fits). Their K are started at 1 m/s.
    RealSystem("real-013", "HD_215152", "HD_215152/stargazer_real_013.csv", 0.77, "Stargazer",
               extra_planets=({"P_days": 10.86, "K_ms": 1.0, "e": 0.0, "omega_deg": 0.0,
                               "source": "Delisle et al. 2018, period only (K a start)"},
                              {"P_days": 25.2, "K_ms": 1.0, "e": 0.0, "omega_deg": 0.0,
                               "source": "Delisle et al. 2018, period only (K a start)"})),
    RealSystem("real-014", "HD_217107", "HD_217107/stargazer_real_014.csv", 1.02, "Stargazer"),
    RealSystem("real-015", "HD_37124", "HD_37124/stargazer_real_015.csv", 0.85, "Stargazer"),
    RealSystem("real-016", "HD_40307", "HD_40307/stargazer_real_016.csv", 0.77, "Stargazer"),
    RealSystem("real-017", "HD_45364", "HD_45364/stargazer_real_017.csv", 0.82, "Stargazer"),
    RealSystem("real-018", "HD_69830", "HD_69830/stargazer_real_018.csv", 0.86, "Stargazer"),
    RealSystem("real-019", "HD_74156", "HD_74156/stargazer_real_019.csv", 1.24, "Stargazer"),
    RealSystem("real-020", "HD_88133", "HD_88133/stargazer_real_020.csv", 1.20, "Stargazer"),
)
REAL_IDS = tuple(s.task_id for s in SYSTEMS)
_SYSTEM_OF = {s.task_id: s for s in SYSTEMS}


# ---- data ------------------------------------------------------------------------------
def _data_root() -> Any:
    return resources.files(__package__) / "data"


def read_csv(name: str) -> pd.DataFrame:
    """A shipped real-data CSV (columns time_jd, rv_ms, err_ms, instrument)."""
    with (_data_root() / "real" / name.replace("/", "__")).open("r") as fh:
        return pd.read_csv(fh)


@dataclass(frozen=True)
class RealData:
    """Anonymised arrays of one real task (sorted by time)."""

    times_days: np.ndarray
    rv_ms: np.ndarray
    err_ms: np.ndarray
    instrument: np.ndarray
    label_of_source: dict[str, str]


def anonymise(df: pd.DataFrame) -> RealData:
    """Shift times to start at 0, subtract each instrument's median RV, relabel the
    instruments inst_A, inst_B, ... by first appearance; sort by time."""
    df = df.sort_values("time_jd", kind="stable").reset_index(drop=True)
    sources = list(dict.fromkeys(df["instrument"].astype(str)))
    labels = {src: f"inst_{string.ascii_uppercase[i]}" for i, src in enumerate(sources)}
    rv = df["rv_ms"].to_numpy(float).copy()
    for src in sources:
        sel = (df["instrument"].astype(str) == src).to_numpy()
        rv[sel] -= np.median(rv[sel])
    t = df["time_jd"].to_numpy(float)
    return RealData(times_days=t - t[0], rv_ms=rv, err_ms=df["err_ms"].to_numpy(float),
                    instrument=np.array([labels[s] for s in df["instrument"].astype(str)]),
                    label_of_source=labels)


# ---- refit -----------------------------------------------------------------------------
def _planets_from_vector(x: np.ndarray, n_planets: int) -> np.ndarray:
    p = x[:5 * n_planets].reshape(n_planets, 5)
    period, k = np.exp(p[:, 0]), np.exp(p[:, 1])
    ecc = np.minimum(p[:, 2] ** 2 + p[:, 3] ** 2, 0.95)
    omega = np.arctan2(p[:, 3], p[:, 2])
    return np.column_stack([period, k, ecc, omega, np.mod(p[:, 4], TWO_PI)])


def _vector_from_planets(planets: np.ndarray) -> np.ndarray:
    out = []
    for period, k, ecc, omega, lam in planets:
        se = math.sqrt(ecc)
        out.append([math.log(period), math.log(k), se * math.cos(omega), se * math.sin(omega),
                    lam])
    return np.array(out).ravel()


def _offsets(resid: np.ndarray, var: np.ndarray, index: np.ndarray, n_inst: int) -> np.ndarray:
    w = 1.0 / var
    return (np.bincount(index, w * resid, n_inst) / np.bincount(index, w, n_inst))[index]


def _ml_jitter(resid: np.ndarray, err: np.ndarray) -> float:
    def nll(j: float) -> float:
        v = err ** 2 + j ** 2
        return float(np.sum(resid ** 2 / v + np.log(v)))
    hi = max(5.0 * float(np.std(resid)), 1e-3)
    return float(minimize_scalar(nll, bounds=(0.0, hi), method="bounded").x)


def _grid_phases(data: RealData, planets: np.ndarray, index: np.ndarray, n_inst: int,
                 var: np.ndarray) -> np.ndarray:
    """Grid-search each planet's mean longitude (largest K first), others held fixed."""
    planets = planets.copy()
    grid = np.linspace(0.0, TWO_PI, 360, endpoint=False)
    t0 = data.times_days[0]
    for i in np.argsort(-planets[:, 1]):
        others = np.delete(planets, i, axis=0)
        base = data.rv_ms - rv_curves(data.times_days, others, t0).sum(axis=0)
        trial = np.repeat(planets[i:i + 1], grid.size, axis=0)
        trial[:, 4] = grid
        curves = rv_curves(data.times_days, trial, t0)            # (360, n)
        chi2 = []
        for c in curves:
            r = base - c
            r = r - _offsets(r, var, index, n_inst)
            chi2.append(np.sum(r * r / var))
        planets[i, 4] = grid[int(np.argmin(chi2))]
    return planets


def refit(data: RealData, literature: np.ndarray) -> dict[str, Any]:
    """Refit the (N, 5) literature planets to the data (see the module docstring).
    Returns the refit planets, per-instrument jitter, residual RMS, and the RMS of the
    literature orbit with only its phases refit."""
    labels = sorted(set(data.instrument.tolist()))
    index = np.array([labels.index(x) for x in data.instrument])
    n_inst, n_pl = len(labels), literature.shape[0]
    t0 = data.times_days[0]
    jitter = np.zeros(n_inst)

    def var_of(j: np.ndarray) -> np.ndarray:
        return data.err_ms ** 2 + j[index] ** 2

    start = _grid_phases(data, literature, index, n_inst, var_of(jitter))
    lit_phased = start.copy()
    x = _vector_from_planets(start)
    lo = np.full(x.size, -np.inf)
    hi = np.full(x.size, np.inf)
    for i, period in enumerate(literature[:, 0]):
        lo[5 * i] = math.log(period * (1 - MAX_REL_PERIOD_SHIFT))
        hi[5 * i] = math.log(period * (1 + MAX_REL_PERIOD_SHIFT))
        # a planet the literature fits on a circular orbit is refit circular (its
        # eccentricity is unconstrained by the data and would only soak up noise)
        bound = CIRCULAR_SQRT_E if literature[i, 2] == 0.0 else 0.975
        lo[5 * i + 2: 5 * i + 4] = -bound
        hi[5 * i + 2: 5 * i + 4] = bound
    x = np.clip(x, lo + 1e-9, hi - 1e-9)
    status = None
    for _ in range(N_ITER):
        var = var_of(jitter)
        sd = np.sqrt(var)

        def residuals(v: np.ndarray, var: np.ndarray = var, sd: np.ndarray = sd) -> np.ndarray:
            r = data.rv_ms - rv_curves(data.times_days, _planets_from_vector(v, n_pl),
                                       t0).sum(axis=0)
            return (r - _offsets(r, var, index, n_inst)) / sd

        sol = least_squares(residuals, x, bounds=(lo, hi), x_scale="jac", max_nfev=4000)
        x, status = sol.x, sol.status
        r = residuals(x) * sd
        jitter = np.array([_ml_jitter(r[index == k], data.err_ms[index == k])
                           for k in range(n_inst)])
    planets = _planets_from_vector(x, n_pl)
    resid = data.rv_ms - rv_curves(data.times_days, planets, t0).sum(axis=0)
    resid = resid - _offsets(resid, var_of(jitter), index, n_inst)
    lit_resid = data.rv_ms - rv_curves(data.times_days, lit_phased, t0).sum(axis=0)
    lit_resid = lit_resid - _offsets(lit_resid, var_of(np.zeros(n_inst)), index, n_inst)
    return {"planets": planets, "jitter_ms": dict(zip(labels, jitter.tolist(), strict=True)),
            "rms_ms": float(np.sqrt(np.mean(resid ** 2))),
            "rms_literature_phases_refit_ms": float(np.sqrt(np.mean(lit_resid ** 2))),
            "literature_phased": lit_phased, "converged": bool(status is not None and status > 0)}


def refit_is_sensible(fit: dict[str, Any], literature: np.ndarray) -> tuple[bool, str]:
    """Sanity of a refit against the literature orbit: converged, no period pinned at its
    +-5 % bound, K within a factor 2, |delta e| <= 0.3, e <= 0.9, and a residual RMS no
    worse than the literature orbit's."""
    planets = fit["planets"]
    if not fit["converged"]:
        return False, "least squares did not converge"
    rel = np.abs(planets[:, 0] / literature[:, 0] - 1.0)
    if np.any(rel > 0.999 * MAX_REL_PERIOD_SHIFT):
        return False, "a period ran to its bound"
    if np.any(planets[:, 2] > MAX_ECC):
        return False, "an eccentricity above 0.9"
    k_ratio = planets[:, 1] / literature[:, 1]
    if np.any((k_ratio > MAX_K_RATIO) | (k_ratio < 1.0 / MAX_K_RATIO)):
        return False, "a K more than a factor 2 from the literature"
    if np.any(np.abs(planets[:, 2] - literature[:, 2]) > MAX_ECC_SHIFT):
        return False, "an eccentricity more than 0.3 from the literature"
    if fit["rms_ms"] > fit["rms_literature_phases_refit_ms"] * 1.0001:
        return False, "worse than the literature orbit"
    return True, "refit accepted"


# ---- literature ------------------------------------------------------------------------
def literature_planets(truth_json: dict[str, Any], system: RealSystem,
                       t_ref_jd: float) -> tuple[np.ndarray, list[dict[str, Any]], str]:
    """(N, 5) literature planets at t_ref (phases from T_peri / T_conj when given, else
    0 -- the refit grid-searches them anyway), the raw entries, and their source."""
    raw = truth_json.get("literature_planets_as_transcribed_by_stargazer")
    source = "Stargazer transcription"
    if not raw:
        raw = truth_json["literature_planets_from_memory_UNVERIFIED"]
        source = "literature, unverified transcription"
    if system.planet_index is not None:
        raw = [raw[i] for i in system.planet_index]
    raw = list(raw) + [dict(p) for p in system.extra_planets]
    rows = []
    for p in raw:
        omega = math.radians(p.get("omega_deg", 0.0))
        ecc = float(p["e"])
        lam = 0.0
        if "T_peri_jd" in p:
            lam = mean_longitude_from_periastron(p["T_peri_jd"], p["P_days"], omega, t_ref_jd)
        elif "T_conj_jd" in p:
            f_conj = math.pi / 2 - omega
            m_conj = f_conj - 2 * ecc * math.sin(f_conj)     # first order in e
            lam = float(np.mod(omega + m_conj + TWO_PI * (t_ref_jd - p["T_conj_jd"])
                               / p["P_days"], TWO_PI))
        rows.append([p["P_days"], p["K_ms"], ecc, omega, lam])
    return np.array(rows, dtype=float), list(raw), source


def build(source_dir: Path, out_dir: Path) -> list[dict[str, Any]]:
    """Copy the data files and refit every system; write data/real_systems.json.
    (Run once by the maintainers; the package reads only what this writes.)"""
    (out_dir / "real").mkdir(parents=True, exist_ok=True)
    table = []
    for system in SYSTEMS:
        src = source_dir / system.csv
        dst = out_dir / "real" / system.csv.replace("/", "__")
        dst.write_text(src.read_text())
        df = pd.read_csv(dst)
        data = anonymise(df)
        truth_json = json.loads((source_dir / system.system / "truth.json").read_text())
        lit, raw, lit_source = literature_planets(truth_json, system, float(df["time_jd"].min()))
        fit = refit(data, lit)
        ok, why = refit_is_sensible(fit, lit)
        if ok:
            planets, used = fit["planets"], "refit"
        else:
            planets, used = fit["literature_phased"], "literature"
            fit = refit_jitter_only(data, planets, fit)
        table.append({
            "task_id": system.task_id, "system": system.system, "csv": system.csv,
            "reference": truth_json.get("reference"), "star_mass_msun": system.star_mass_msun,
            "star_mass_source": system.star_mass_source, "literature_source": lit_source,
            "literature": [{k: v for k, v in p.items()} for p in raw],
            "truth": planets.tolist(), "truth_used": used, "refit_note": why,
            "jitter_ms": fit["jitter_ms"], "rms_ms": fit["rms_ms"],
            "rms_literature_phases_refit_ms": fit["rms_literature_phases_refit_ms"],
            "n_points": int(len(df)), "instruments": data.label_of_source,
        })
    (out_dir / "real_systems.json").write_text(json.dumps(table, indent=1))
    return table


def fixed_orbit_jitter(times_days: np.ndarray, rv_ms: np.ndarray, err_ms: np.ndarray,
                       instrument: np.ndarray, planets: np.ndarray) -> tuple[np.ndarray, float]:
    """Maximum-likelihood jitter per instrument (m/s, instruments in sorted label order)
    of a fixed (N, 5) orbit, alternating with the weighted per-instrument offsets, and
    the unweighted residual RMS (m/s). Phases are taken at t_ref = the first epoch."""
    labels = sorted(set(instrument.tolist()))
    index = np.array([labels.index(x) for x in instrument])
    resid = rv_ms - rv_curves(times_days, planets, float(np.min(times_days))).sum(axis=0)
    jitter = np.zeros(len(labels))
    for _ in range(N_ITER):
        r = resid - _offsets(resid, err_ms ** 2 + jitter[index] ** 2, index, len(labels))
        jitter = np.array([_ml_jitter(r[index == k], err_ms[index == k])
                           for k in range(len(labels))])
    return jitter, float(np.sqrt(np.mean(r ** 2)))


def refit_jitter_only(data: RealData, planets: np.ndarray, fit: dict[str, Any]) -> dict[str, Any]:
    """Jitter and RMS of a fixed orbit (used when the literature orbit is kept)."""
    labels = sorted(set(data.instrument.tolist()))
    jitter, rms = fixed_orbit_jitter(data.times_days, data.rv_ms, data.err_ms, data.instrument,
                                     planets)
    return {**fit, "jitter_ms": dict(zip(labels, jitter.tolist(), strict=True)), "rms_ms": rms}


# ---- tasks -----------------------------------------------------------------------------
@cache
def real_table() -> tuple[dict[str, Any], ...]:
    """The stored real-system table (literature, truth, jitter, residual RMS)."""
    with (_data_root() / "real_systems.json").open("r") as fh:
        return tuple(json.load(fh))


@cache
def real_task(task_id: str) -> RVTask:
    """The anonymised real task `task_id` ("real-001".."real-020")."""
    entries = {e["task_id"]: e for e in real_table()}
    if task_id not in entries:
        raise ValueError(f"unknown real task {task_id!r}; ids real-001..real-020")
    entry = entries[task_id]
    data = anonymise(read_csv(entry["csv"]))
    labels = sorted(set(data.instrument.tolist()))
    jitter = np.array([entry["jitter_ms"][lab] for lab in labels])
    index = np.array([labels.index(x) for x in data.instrument])
    return RVTask(
        task_id=task_id, tier="real", source="real", star_mass_msun=entry["star_mass_msun"],
        times_days=data.times_days, rv_ms=data.rv_ms, err_ms=data.err_ms,
        instrument=data.instrument, truth=np.array(entry["truth"], dtype=float),
        truth_jitter_ms=jitter, extra_var_ms2=jitter[index] ** 2,
        meta={"truth_used": entry["truth_used"], "note": _SYSTEM_OF[task_id].note})


def rebuilt_truth(published_id: str, times_days: np.ndarray) -> tuple[str, np.ndarray]:
    """Our rebuilt truth for the data of a published real-data task file: (our task id,
    (N, 5) planets with phases at the file's first epoch). The file's task id names the
    system (real_NNN -> real-NNN) and its epochs, relative to the first, must be those of
    our shipped data (to 1e-6 d), so the truth was fit to the same observations.
    ValueError (with the reason) otherwise."""
    our_id = str(published_id).strip().replace("_", "-")
    entries = {e["task_id"]: e for e in real_table()}
    if our_id not in entries:
        raise ValueError(f"its task id {published_id!r} names none of the shipped real "
                         "systems real_001..real_020")
    shipped = np.sort(read_csv(entries[our_id]["csv"])["time_jd"].to_numpy(float))
    mine = np.sort(np.asarray(times_days, dtype=float))
    if mine.size != shipped.size or not np.allclose(mine - mine[0], shipped - shipped[0],
                                                    rtol=0.0, atol=1e-6):
        raise ValueError(f"its observation epochs differ from the shipped data of {our_id}")
    # the shipped truth's phases are at the first epoch of the same epochs
    return our_id, np.array(entries[our_id]["truth"], dtype=float)


if __name__ == "__main__":  # pragma: no cover - maintainers' build step
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m discoverygym.suites.stargazer.real RV_DATA_DIR")
    src_dir = Path(sys.argv[1])
    here = Path(__file__).resolve().parent / "data"
    for row in build(src_dir, here):
        print(row["task_id"], row["system"], row["truth_used"], round(row["rms_ms"], 2),
              round(row["rms_literature_phases_refit_ms"], 2), row["refit_note"])
