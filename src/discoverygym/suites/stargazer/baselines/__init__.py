"""Scripted agents of the stargazer suite: `AGENTS` maps each name to "module:class";
`discoverygym run stargazer --agent NAME` finds them here. `CALIBRATION` names the
agents `discoverygym calibrate stargazer` runs: the privileged oracle (must pass every
task), the honest baselines, and the trivial agents (must fail every task)."""

from .agents import AGENTS

CALIBRATION = {
    "oracle": ["oracle"],
    "baselines": ["classical", "nested"],
    # every scripted baseline here fits the RVs; none skips the science
    "no_science": [],
    "trivial": ["no-planet", "prompt-guess"],
}

__all__ = ["AGENTS", "CALIBRATION"]
