"""An RV task: the data an agent sees and the hidden truth it is scored against.

Synthetic (generator), real (real systems) and imported (published files) tasks all
become an `RVTask`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...physics.rv_kepler import PLANET_COLUMNS, m_sin_i_mjup
from .scoring import ScoringContext, make_context


@dataclass(frozen=True)
class RVTask:
    """One task. `truth` is an (N, 5) planet array (kepler.PLANET_COLUMNS, phase as the
    mean longitude at t_ref = the first epoch); `truth_jitter_ms` the per-instrument
    jitter (m/s, ordered as `labels`); `extra_var_ms2` the per-epoch noise variance
    beyond the quoted sigma (jitter^2 + activity sigma^2) that v2's RMS gate allows."""

    task_id: str
    tier: str
    source: str                      # "synthetic" | "real" | "imported"
    star_mass_msun: float
    times_days: NDArray[np.float64]
    rv_ms: NDArray[np.float64]
    err_ms: NDArray[np.float64]
    instrument: NDArray[np.str_]
    truth: NDArray[np.float64]
    truth_jitter_ms: NDArray[np.float64]
    extra_var_ms2: NDArray[np.float64]
    seed: int | None = None
    difficulty: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def t_ref_days(self) -> float:
        return float(self.times_days[0])

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.instrument.tolist())))

    def context(self) -> ScoringContext:
        """The evaluator's context for this task."""
        return make_context(self.times_days, self.rv_ms, self.err_ms, self.instrument.tolist(),
                            self.truth, self.t_ref_days, self.extra_var_ms2)

    def truth_planets(self) -> list[dict[str, float]]:
        """The truth as a JSON-able planet list (with m sin i for convenience)."""
        out = []
        for row in self.truth:
            planet = {name: float(v) for name, v in zip(PLANET_COLUMNS, row, strict=True)}
            planet["m_sin_i_mjup"] = float(m_sin_i_mjup(row[1], self.star_mass_msun, row[0],
                                                        row[2]))
            out.append(planet)
        return out

    def truth_submission(self) -> dict[str, Any]:
        """The exact truth in the `submit` tool's format (what the oracle submits)."""
        planets = [{k: float(v) for k, v in zip(PLANET_COLUMNS, row, strict=True)}
                   for row in self.truth]
        jitter = {lab: float(j) for lab, j in zip(self.labels, self.truth_jitter_ms,
                                                  strict=True)}
        return {"planets": planets, "jitter_ms": jitter}
