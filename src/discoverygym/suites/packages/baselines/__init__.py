"""Scripted agents of the packages suite: `AGENTS` maps each name to "module:class";
`discoverygym run packages --agent NAME` finds them here. `CALIBRATION` says what each
is for (`discoverygym calibrate packages`): the privileged oracle must pass, the
baseline is the simpler honest method each package's SOTA is measured against, and the
trivial agents answer without measuring."""

from .calibration import AGENTS as CALIBRATION_AGENTS
from .solvers import AGENTS as SOLVER_AGENTS

AGENTS = {**SOLVER_AGENTS, **CALIBRATION_AGENTS}

CALIBRATION = {
    "oracle": ["oracle"],
    "baselines": ["baseline"],
    "no_science": [],
    "trivial": ["empty-outputs", "constant"],
}

__all__ = ["AGENTS", "CALIBRATION"]
