"""Scripted agents of the gravity suite: `AGENTS` maps each name to "module:class";
`discoverygym run gravity --agent NAME` finds them here. `CALIBRATION` says which of
them `discoverygym calibrate gravity` runs in which role."""

# Names only, no imports: `run gravity --agent TYPO` is refused before REBOUND loads.
_HERE = "discoverygym.suites.gravity.baselines"
AGENTS = {
    "expert-full": f"{_HERE}.expert:ExpertFull",
    "expert-uniform": f"{_HERE}.expert:ExpertUniform",
    "expert-adaptive": f"{_HERE}.expert:ExpertAdaptive",
    "constant": f"{_HERE}.trivial:ConstantGuess",
    "window-guess": f"{_HERE}.trivial:WindowGuess",
    "no-answer": f"{_HERE}.trivial:NoAnswer",
}

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
