"""Scripted agents of the gravity suite: `AGENTS` maps each name to "module:class";
`discoverygym run gravity --agent NAME` finds them here. `CALIBRATION` says which of
them `discoverygym calibrate gravity` runs in which role."""

from .expert import AGENTS as EXPERT_AGENTS
from .trivial import AGENTS as TRIVIAL_AGENTS

AGENTS = {**EXPERT_AGENTS, **TRIVIAL_AGENTS}

# expert-adaptive knows the two-body form and fits it to what it observes: it passes
# every published pair under any protocol. expert-uniform is the published reference
# expert (equally spaced observations). No gravity baseline skips the physics yet.
CALIBRATION = {
    "oracle": ["expert-adaptive"],
    "baselines": ["expert-uniform"],
    "no_science": [],
    "trivial": ["constant", "window-guess", "no-answer"],
}

__all__ = ["AGENTS", "CALIBRATION"]
