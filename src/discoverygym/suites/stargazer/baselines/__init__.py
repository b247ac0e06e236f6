"""Scripted agents of the stargazer suite: `AGENTS` maps each name to "module:class";
`discoverygym run stargazer --agent NAME` finds them here. `CALIBRATION` names the
agents `discoverygym calibrate stargazer` runs: the privileged oracle (must pass every
task), the honest baselines, and the trivial agents (must fail every task)."""

# Names only, no imports: `run stargazer --agent TYPO` is refused before SciPy loads.
_HERE = "discoverygym.suites.stargazer"
AGENTS = {
    "classical": f"{_HERE}.baselines.agents:ClassicalAgent",
    "nested": f"{_HERE}.baselines.agents:NestedSamplingAgent",
    # privileged calibration agent of the suite (submits the hidden truth)
    "oracle": f"{_HERE}.oracle:Oracle",
    # trivial agents: answers that ignore the data (calibration: they must fail)
    "no-planet": f"{_HERE}.baselines.trivial:NoPlanetAgent",
    "prompt-guess": f"{_HERE}.baselines.trivial:PromptGuessAgent",
}

CALIBRATION = {
    "oracle": ["oracle"],
    "baselines": ["classical", "nested"],
    # every scripted baseline here fits the RVs; none skips the science
    "no_science": [],
    "trivial": ["no-planet", "prompt-guess"],
}

__all__ = ["AGENTS", "CALIBRATION"]
