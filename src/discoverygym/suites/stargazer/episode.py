"""The stargazer episode: RV data in the workspace, `submit` a planet list, `end`.

The best submission counts (ranked in the episode's mode by passed, then criteria met,
then match score); the episode ends when a submission passes, when the submissions run
out, or when the agent calls `end`. Every record holds both modes' verdicts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...core import Budget, Episode, EpisodeRecord, Score, ToolInputError, ToolResult, ToolSpec
from ...physics.rv_kepler import mean_longitude_from_periastron, semi_amplitude_ms
from .scoring import CRITERIA, MODES, RULES, Verdict, evaluate, fit_statistics, n_recovered
from .task import RVTask

MAX_PLANETS = 8
SUBMISSIONS = {"easy": 3, "medium": 5, "hard": 10, "real": 10}
TIME_S = {"easy": 600, "medium": 900, "hard": 1500, "real": 1500}
NOTHING = "Nothing was charged."

_PLANET_SCHEMA = {
    "type": "object",
    "properties": {
        "P_days": {"type": "number", "description": "orbital period (days), > 0"},
        "K_ms": {"type": "number", "description": "RV semi-amplitude (m/s), > 0"},
        "m_sin_i_mjup": {"type": "number",
                         "description": "minimum mass (Jupiter masses), > 0; instead of K_ms"},
        "e": {"type": "number", "description": "eccentricity, 0 <= e < 1"},
        "omega_rad": {"type": "number", "description": "argument of periastron (rad)"},
        "l_rad": {"type": "number",
                  "description": "mean longitude omega + M0 at t_ref = the first epoch (rad)"},
        "tp_days": {"type": "number",
                    "description": "time of periastron (days, same time axis as the data); "
                                   "instead of l_rad"},
    },
    "additionalProperties": False,
}

SUBMIT_SCHEMA = {
    "type": "object",
    "properties": {
        "planets": {"type": "array", "items": _PLANET_SCHEMA,
                    "description": f"1..{MAX_PLANETS} planets"},
        "jitter_ms": {"type": "object", "additionalProperties": {"type": "number"},
                      "description": "optional extra white noise per instrument (m/s, >= 0), "
                                     "e.g. {\"inst_A\": 1.2}"},
    },
    "required": ["planets"],
    "additionalProperties": False,
}


class StargazerEpisode(Episode):
    """One attempt at one RV task. The task (with its truth) stays private."""

    def __init__(self, task: RVTask, *, seed: int = 0, mode: str = "v2",
                 options: dict[str, Any] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        super().__init__(suite="stargazer", task_id=task.task_id, seed=seed,
                         options=dict(options or {"mode": mode}), world=task.source,
                         protocol=mode)
        self._task = task
        self._ctx = task.context()
        self._mode = mode
        self._limit = SUBMISSIONS.get(task.tier, 10)
        # the one count of submissions (each valid one is charged; invalid ones are not)
        self._budget = self._add_budget(Budget("submissions", self._limit))
        self._submissions: list[tuple[dict[str, Any], dict[str, Verdict]]] = []
        self._best: int | None = None
        self._add_tool(ToolSpec(
            "submit",
            "Submit a planetary system (planet list and optional per-instrument jitter). "
            "Returns pass/fail per criterion (rms, bic, match, count). The best submission "
            "counts; the episode ends when one passes or the submissions run out.",
            SUBMIT_SCHEMA), self._submit)
        self._add_tool(ToolSpec("end", "Finish the episode; the best submission so far counts.",
                                {"type": "object", "properties": {},
                                 "additionalProperties": False}), self._end)

    # ---- what the agent sees -----------------------------------------------------------
    @property
    def prompt(self) -> str:
        labels = ", ".join(self._task.labels)
        return (
            "Radial-velocity planet search. The workspace holds RV measurements of one star: "
            "`data` (pandas DataFrame: time_days, rv_ms, err_ms, instrument), the same as "
            "arrays `times`, `rv`, `err`, `instrument`, the stellar mass `star_mass` (Msun), "
            "`t_ref` (the first epoch, days) and `limits`. Instruments: "
            f"{labels}; each has its own unknown zero-point offset (fitted by the scorer), and "
            "the data may hold extra white noise (jitter) beyond the quoted errors and "
            "stellar activity.\n"
            "Find every planet and submit its orbit with `submit`: planets = list of "
            "{P_days, K_ms (or m_sin_i_mjup, exactly one), e in [0, 1), omega_rad, and the "
            "phase as exactly one of l_rad (mean longitude omega + M0 at t_ref) or tp_days "
            "(time of periastron)}; optional jitter_ms = {instrument: m/s}. The model is "
            "RV(t) = sum_k K_k [cos(nu_k + omega_k) + e_k cos(omega_k)] + offset(instrument), "
            "with mean anomaly M = l - omega + 2 pi (t - t_ref) / P.\n"
            f"A submission passes when all four criteria hold (scoring mode {self._mode}): "
            "rms (residuals consistent with the noise), bic (the model beats a constant per "
            "instrument by the Bayesian information criterion), match (the planets match the "
            "true ones: period, amplitude, eccentricity and curve shape) and count (the right "
            f"number of planets). You have {self._limit} submissions (at most {MAX_PLANETS} "
            "planets each); invalid submissions cost nothing. The best submission counts; "
            "call `end` when you are done.")

    def workspace(self) -> dict[str, Any]:
        t = self._task
        data = pd.DataFrame({"time_days": t.times_days.copy(), "rv_ms": t.rv_ms.copy(),
                             "err_ms": t.err_ms.copy(), "instrument": t.instrument.copy()})
        return {
            "data": data, "times": t.times_days.copy(), "rv": t.rv_ms.copy(),
            "err": t.err_ms.copy(), "instrument": t.instrument.copy(),
            "star_mass": float(t.star_mass_msun), "t_ref": t.t_ref_days,
            "limits": {"submissions": self._limit, "max_planets": MAX_PLANETS,
                       "submissions_left": self._submissions_left(),
                       "time_s": TIME_S.get(t.tier, 1500)},
            "tier": t.tier,
        }

    def budget_left(self) -> float | None:
        """Submissions left."""
        return float(self._submissions_left())

    def _submissions_left(self) -> int:
        return int(self._budget.remaining or 0)

    # ---- tools -----------------------------------------------------------------------
    def _submit(self, args: dict[str, Any]) -> ToolResult:
        planets, jitter = self.parse_submission(args)
        verdicts = evaluate(self._ctx, planets, jitter)
        self._budget.charge(1)
        self._submissions.append((self._normalised_answer(args), verdicts))
        index = len(self._submissions) - 1
        if self._best is None or self._rank(index) > self._rank(self._best):
            self._best = index
        verdict = verdicts[self._mode]
        left = self._submissions_left()
        data: dict[str, Any] = {"passed": verdict.passed, "criteria": dict(verdict.criteria),
                                "submissions_left": left}
        if self._mode == "v1":
            # the published feedback also reports the match score; v2 never does
            data["match_score"] = verdict.match
        status = ", ".join(f"{c}: {'pass' if verdict.criteria[c] else 'fail'}" for c in CRITERIA)
        text = f"Submission {index + 1}: {'PASSED' if verdict.passed else 'not passed'} ({status})."
        if verdict.passed or left <= 0:
            self._finish(self._submissions[self._best][0])
            text += " The episode has ended."
        else:
            text += f" {left} submission(s) left."
        return ToolResult(text, data=data)

    def _end(self, args: dict[str, Any]) -> ToolResult:
        if self._best is None:
            self.end()
            return ToolResult("Episode ended without a submission.")
        self._finish(self._submissions[self._best][0])
        return ToolResult(f"Episode ended; submission {self._best + 1} counts.")

    def _rank(self, index: int) -> tuple[bool, int, float]:
        v = self._submissions[index][1][self._mode]
        return (v.passed, v.n_ok(), v.match)

    # ---- validation ------------------------------------------------------------------
    def parse_submission(self, args: dict[str, Any],
                         check_limit: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Check a `submit` argument dict and turn it into an (N, 5) planet array and a
        jitter array (instrument order). Raises ToolInputError (nothing charged)."""
        if check_limit and self._submissions_left() <= 0:
            raise ToolInputError(f"No submissions left (limit {self._limit}). {NOTHING}")
        planets = args.get("planets")
        if not isinstance(planets, list) or not 1 <= len(planets) <= MAX_PLANETS:
            n = len(planets) if isinstance(planets, list) else 0
            raise ToolInputError(
                f"'planets' must be a list of 1 to {MAX_PLANETS} planets; got {n}. {NOTHING}")
        rows = [self._parse_planet(i, p) for i, p in enumerate(planets)]
        labels = self._task.labels
        jitter = np.zeros(len(labels))
        for name, value in (args.get("jitter_ms") or {}).items():
            if name not in labels:
                raise ToolInputError(
                    f"jitter_ms names an unknown instrument {name!r}; instruments: "
                    f"{', '.join(labels)}. {NOTHING}")
            if value < 0:
                raise ToolInputError(f"jitter_ms[{name!r}] must be >= 0 m/s. {NOTHING}")
            jitter[labels.index(name)] = float(value)
        return np.array(rows, dtype=float), jitter

    def _parse_planet(self, i: int, p: dict[str, Any]) -> list[float]:
        where = f"planets[{i}]"
        for key in ("P_days", "e", "omega_rad"):
            if key not in p:
                raise ToolInputError(f"{where} is missing '{key}'. {NOTHING}")
        period, ecc = float(p["P_days"]), float(p["e"])
        if period <= 0:
            raise ToolInputError(f"{where}.P_days must be > 0 days, got {period}. {NOTHING}")
        if not 0 <= ecc < 1:
            raise ToolInputError(f"{where}.e must satisfy 0 <= e < 1, got {ecc}. {NOTHING}")
        has_k, has_m = "K_ms" in p, "m_sin_i_mjup" in p
        if has_k == has_m:
            raise ToolInputError(
                f"{where} must give exactly one of 'K_ms' or 'm_sin_i_mjup' "
                f"({'both' if has_k else 'neither'} given). {NOTHING}")
        amp = float(p["K_ms"] if has_k else p["m_sin_i_mjup"])
        if amp <= 0:
            raise ToolInputError(f"{where}: the amplitude/mass must be > 0. {NOTHING}")
        k_ms = amp if has_k else float(semi_amplitude_ms(amp, self._task.star_mass_msun,
                                                           period, ecc))
        has_l, has_tp = "l_rad" in p, "tp_days" in p
        if has_l == has_tp:
            raise ToolInputError(
                f"{where} must give the phase as exactly one of 'l_rad' (mean longitude at "
                f"t_ref) or 'tp_days' (time of periastron) ({'both' if has_l else 'neither'} "
                f"given). {NOTHING}")
        omega = float(p["omega_rad"])
        lam = (float(p["l_rad"]) if has_l else
               mean_longitude_from_periastron(float(p["tp_days"]), period, omega,
                                              self._task.t_ref_days))
        return [period, k_ms, ecc, omega, lam]

    @staticmethod
    def _normalised_answer(args: dict[str, Any]) -> dict[str, Any]:
        return {"planets": [dict(p) for p in args["planets"]],
                "jitter_ms": dict(args.get("jitter_ms") or {})}

    # ---- scoring ---------------------------------------------------------------------
    def _before_record(self) -> None:
        """An agent that stopped without `end` still has its best submission scored."""
        if not self.answered and self._best is not None:
            self._finish(self._submissions[self._best][0])

    def _extend_record(self, record: EpisodeRecord) -> None:
        # also on records without an answer: what the agent was allowed to spend
        record.details.setdefault("mode", self._mode)
        record.details.setdefault("tier", self._task.tier)
        record.details.setdefault("n_submissions", len(self._submissions))
        record.details["max_submissions"] = self._limit

    def _truth_for_record(self) -> Any:
        return {"planets": self._task.truth_planets(), "n_planets": int(self._task.truth.shape[0])}

    def _metric_name(self) -> str:
        return "match"

    def _score(self, answer: Any) -> Score:
        # the stored answer was validated when it was submitted
        planets, jitter = self.parse_submission(answer, check_limit=False)
        stats = fit_statistics(self._ctx, planets, jitter)
        verdicts = {mode: rule(stats) for mode, rule in RULES.items()}
        chosen = verdicts[self._mode]
        details = {
            "mode": self._mode, "tier": self._task.tier, "source": self._task.source,
            "difficulty": self._task.difficulty.get("difficulty"),
            "v1": verdicts["v1"].to_dict(), "v2": verdicts["v2"].to_dict(),
            "n_found": int(planets.shape[0]), "n_true": int(self._task.truth.shape[0]),
            # truth planets whose matched guess alone reaches the match threshold
            "n_recovered": n_recovered(stats),
            "n_submissions": len(self._submissions),
            "best_submission": None if self._best is None else self._best + 1,
            # the best submission as scored (P, K, e, omega, l at t_ref; jitter in
            # instrument order), for reports
            "best_planets": planets.tolist(), "best_jitter_ms": jitter.tolist(),
        }
        return Score(passed=chosen.passed, score=float(chosen.passed), metric="match",
                     value=chosen.match, threshold=0.8, truth=self._truth_for_record(),
                     details=details)

    # ---- calibration -----------------------------------------------------------------
    def truth_submission(self) -> dict[str, Any]:
        """The exact truth in `submit`'s format (for the privileged oracle agent only)."""
        return self._task.truth_submission()
