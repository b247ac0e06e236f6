"""Published Stargazer task files: import them as tasks, and export ours in that format.

A published task file is one JSON object (the layout of the Stargazer release):
  task_id, truth_difficulty, difficulty_details,
  config: {star: {M_star_sun, gamma_ms}, planets: [{P_days, m_sin_i_mjup, e, inc_rad,
           Omega_rad, omega_rad, l_rad}], instruments: [{label, gamma_ms, sigma_white_ms,
           sigma_jitter_ms}], noise: {sigma_white_ms, sigma_jitter_ms, gp: {use_gp,
           sigma_ms, period_days, Q0, dQ, f}}, engine},
  observations: {times_days, rvs_ms, sigmas_ms, instruments},
  meta: {rv_semantics, ...}.

Only files whose `meta.rv_semantics` is "rv_only" (a purely Keplerian signal) or
"rv_only_compat" (already converted to one) are imported: their truth is scored exactly
as it stands, with K from m sin i by `kepler.semi_amplitude_ms` and the mean longitude
`l_rad` at t_ref = the first epoch. Files without the flag hold an N-body signal drawn
with each planet's full 3D orientation; the published loader re-simulates that signal
with its own REBOUND set-up to swap it for a Keplerian one. We do not reproduce that
simulation, so such files are refused with an explanation.

Real-data files (`difficulty_details.real_data` true: the published bank's 20 real systems)
are real tasks whatever their `truth_difficulty` says: tier "real", with that tier's
budget. Their published truths cannot pass (phases off, no jitter; see the README), so by
default (`real_setup="rebuilt"`) such a file is scored against our rebuilt truth of the
same system (`real.rebuilt_truth`: the file must hold the shipped data) with the
maximum-likelihood jitter of each of the file's instruments under that truth as v2's
allowance; `real_setup="published"` keeps the file's own truth and jitter."""

from __future__ import annotations

import json
import math
import string
from pathlib import Path
from typing import Any

import numpy as np

from ...physics.rv_kepler import m_sin_i_mjup, semi_amplitude_ms
from .difficulty import tier_of
from .real import fixed_orbit_jitter, rebuilt_truth
from .task import RVTask

ACCEPTED_SEMANTICS = ("rv_only", "rv_only_compat")
REAL_SETUPS = ("rebuilt", "published")


class ImportRefused(ValueError):
    """A published task file that cannot be imported (with the reason)."""


def _need(obj: dict[str, Any], key: str, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ImportRefused(f"{where}: missing '{key}'")
    return obj[key]


def is_real_data(raw: dict[str, Any]) -> bool:
    """Whether a parsed published file holds real observations (not a synthetic draw)."""
    details = raw.get("difficulty_details")
    return isinstance(details, dict) and details.get("real_data") is True


def task_from_published(raw: dict[str, Any], task_id: str,
                        real_setup: str = "rebuilt") -> RVTask:
    """An `RVTask` from a parsed published task file (see the module docstring)."""
    if real_setup not in REAL_SETUPS:
        raise ValueError(f"real_setup must be one of {', '.join(REAL_SETUPS)}")
    meta = raw.get("meta") or {}
    semantics = str(meta.get("rv_semantics", ""))
    if semantics not in ACCEPTED_SEMANTICS:
        raise ImportRefused(
            f"{task_id}: meta.rv_semantics is {semantics or 'missing'!r}; only 'rv_only' "
            "(or 'rv_only_compat') files can be imported. Files without it hold an N-body "
            "signal that the published loader re-simulates with REBOUND before scoring; "
            "that conversion is not reproduced here.")
    config = _need(raw, "config", task_id)
    obs = _need(raw, "observations", task_id)
    star_mass = float(_need(_need(config, "star", task_id), "M_star_sun", "config.star"))
    times = np.asarray(_need(obs, "times_days", "observations"), dtype=float)
    rv = np.asarray(_need(obs, "rvs_ms", "observations"), dtype=float)
    err = np.asarray(_need(obs, "sigmas_ms", "observations"), dtype=float)
    raw_labels = [str(x) for x in (obs.get("instruments") or ["default"] * times.size)]
    if not times.size or len({times.size, rv.size, err.size, len(raw_labels)}) != 1:
        raise ImportRefused(f"{task_id}: observation columns differ in length or are empty")
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(rv)) and np.all(err > 0)):
        raise ImportRefused(f"{task_id}: non-finite observations or non-positive sigmas")

    # agents see inst_A, inst_B, ... (the file's labels in sorted order)
    sources = sorted(set(raw_labels))
    rename = {src: f"inst_{string.ascii_uppercase[i]}" for i, src in enumerate(sources)}
    order = np.argsort(times, kind="stable")
    times, rv, err = times[order], rv[order], err[order]
    instrument = np.array([rename[raw_labels[i]] for i in order])

    noise = config.get("noise") or {}
    per_inst = {str(i.get("label")): i for i in config.get("instruments") or []}
    jitter = np.array([float(per_inst.get(src, {}).get(
        "sigma_jitter_ms", noise.get("sigma_jitter_ms", 0.0)) or 0.0) for src in sources])
    gp = noise.get("gp") or {}
    gp_var = float(gp.get("sigma_ms", 0.0)) ** 2 if gp.get("use_gp") else 0.0
    index = np.array([sources.index(raw_labels[i]) for i in order])

    rows = []
    for k, p in enumerate(_need(config, "planets", "config")):
        where = f"config.planets[{k}]"
        period, ecc = float(_need(p, "P_days", where)), float(_need(p, "e", where))
        k_ms = float(semi_amplitude_ms(float(_need(p, "m_sin_i_mjup", where)), star_mass,
                                       period, ecc))
        rows.append([period, k_ms, ecc, float(_need(p, "omega_rad", where)),
                     float(np.mod(float(_need(p, "l_rad", where)), 2 * math.pi))])
    if not rows:
        raise ImportRefused(f"{task_id}: the file has no planets")

    level = raw.get("truth_difficulty")
    real = is_real_data(raw)
    if real:
        # the published harness budgets by truth_difficulty alone, so its real tasks got
        # 3, 5 or 10 submissions; here they are real tasks with the real tier's budget
        tier = "real"
    else:
        tier = tier_of(int(level)) if isinstance(level, int) and 1 <= level <= 10 else "hard"
    truth = np.array(rows, dtype=float)
    meta: dict[str, Any] = {"published_task_id": raw.get("task_id"), "rv_semantics": semantics,
                            "instrument_labels": rename}
    if real and real_setup == "rebuilt":
        try:
            our_id, truth = rebuilt_truth(str(raw.get("task_id") or task_id), times)
        except ValueError as exc:
            raise ImportRefused(
                f"{task_id}: a real-data file without a rebuilt truth: {exc}. Import it "
                "with real_setup='published' to score it against its own truth.") from None
        jitter, _ = fixed_orbit_jitter(times, rv, err, instrument, truth)
        gp_var = 0.0
        meta |= {"truth": "rebuilt", "rebuilt_from": our_id}
    elif real:
        meta |= {"truth": "published"}
    return RVTask(
        task_id=task_id, tier=tier, source="imported", star_mass_msun=star_mass,
        times_days=times, rv_ms=rv, err_ms=err, instrument=instrument,
        truth=truth, truth_jitter_ms=jitter, extra_var_ms2=jitter[index] ** 2 + gp_var,
        difficulty={"difficulty": level, **(raw.get("difficulty_details") or {})},
        meta=meta)


def load_published(path: str | Path, task_id: str | None = None,
                   real_setup: str = "rebuilt") -> RVTask:
    """Import one published task file (ImportRefused with the reason if it cannot be)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ImportRefused(f"{path.name}: not a readable JSON task file ({exc})") from None
    if not isinstance(raw, dict):
        raise ImportRefused(f"{path.name}: not a task file (a JSON object is expected)")
    return task_from_published(raw, task_id or path.stem, real_setup)


def published_files(directory: str | Path) -> dict[str, Path]:
    """Task id (file stem) -> path of every *.json file in a directory."""
    d = Path(directory)
    if not d.is_dir():
        raise ImportRefused(f"tasks_from: {d} is not a directory")
    return {p.stem: p for p in sorted(d.glob("*.json"))}


def to_published(task: RVTask) -> dict[str, Any]:
    """One of our tasks in the published file format, flagged rv_only (a Keplerian
    signal); `task_from_published` of the result gives the same arrays and truth."""
    labels = task.labels
    planets = [{"P_days": float(p), "m_sin_i_mjup": float(m_sin_i_mjup(k, task.star_mass_msun,
                                                                       p, e)),
                "e": float(e), "inc_rad": math.pi / 2, "Omega_rad": 0.0, "omega_rad": float(w),
                "l_rad": float(lam), "m_true_mjup": None}
               for p, k, e, w, lam in task.truth]
    instruments = [{"label": lab, "gamma_ms": 0.0,
                    "sigma_white_ms": float(np.median(task.err_ms[task.instrument == lab])),
                    "sigma_jitter_ms": float(j)}
                   for lab, j in zip(labels, task.truth_jitter_ms, strict=True)]
    activity = task.meta.get("activity") or None
    gp = ({"use_gp": True, "sigma_ms": activity["sigma_ms"],
           "period_days": activity["period_days"], "Q0": activity["Q0"],
           "dQ": activity["dQ"], "f": activity["f"]} if activity else
          {"use_gp": False, "sigma_ms": 0.0})
    level = task.difficulty.get("difficulty")
    details = {k: v for k, v in task.difficulty.items() if k != "difficulty"}
    if task.tier == "real":
        details["real_data"] = True
    return {
        "task_id": task.task_id,
        "truth_difficulty": level,
        "difficulty_details": details,
        "config": {"star": {"M_star_sun": task.star_mass_msun, "gamma_ms": 0.0},
                   "planets": planets, "instruments": instruments,
                   "noise": {"sigma_white_ms": float(np.median(task.err_ms)),
                             "sigma_jitter_ms": float(np.mean(task.truth_jitter_ms)),
                             "gp": gp},
                   "engine": "keplerian"},
        "observations": {"times_days": task.times_days.tolist(), "rvs_ms": task.rv_ms.tolist(),
                         "sigmas_ms": task.err_ms.tolist(),
                         "instruments": task.instrument.tolist()},
        "meta": {"rv_semantics": "rv_only", "generator": "discoverygym stargazer",
                 "seed": task.seed},
    }
