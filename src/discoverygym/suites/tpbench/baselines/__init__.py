"""Scripted agents of the tpbench suite: `AGENTS` maps each name to "module:class";
`discoverygym run tpbench --agent NAME` finds them here. `CALIBRATION` says which of
them `discoverygym calibrate tpbench` runs in which role."""

from .reference import AGENTS as REFERENCE_AGENTS
from .trivial import AGENTS as TRIVIAL_AGENTS

AGENTS = {**REFERENCE_AGENTS, **TRIVIAL_AGENTS}

# `reference` submits the expert's solution (privileged: it must pass every problem).
# `wrong-sign` submits the problem's plausible slip (privileged too); it is listed as a
# baseline so the table shows that every problem's tests catch a near miss.
CALIBRATION = {
    "oracle": ["reference"],
    "baselines": ["wrong-sign"],
    "no_science": [],
    "trivial": ["constant", "no-answer"],
}

__all__ = ["AGENTS", "CALIBRATION"]
