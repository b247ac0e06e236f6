"""Scripted agents of the mad suite: `AGENTS` maps each name to "module:class";
`discoverygym run mad --agent NAME` finds them here."""

# Names only, no imports: `run mad --agent TYPO` is refused before JAX loads. Every
# baseline of the suite, whatever its world; each refuses the worlds it was not built for.
_HERE = "discoverygym.suites.mad.baselines"
AGENTS = {
    "last-seen": f"{_HERE}.classical:LastSeen",
    "ballistic": f"{_HERE}.classical:Ballistic",
    "newtonian": f"{_HERE}.classical:Newtonian",
    "persistence": f"{_HERE}.fluid_quantum:FluidPersistence",
    "navier-stokes": f"{_HERE}.fluid_quantum:FluidNavierStokes",
    "uniform": f"{_HERE}.fluid_quantum:QuantumUniform",
    "empirical": f"{_HERE}.fluid_quantum:QuantumEmpirical",
    "schrodinger": f"{_HERE}.fluid_quantum:QuantumSchrodinger",
    "law-normal": f"{_HERE}.law_describers:LawNormal",
    "law-true": f"{_HERE}.law_describers:LawTrue",
    "law-oracle": f"{_HERE}.law_oracle:LawOracle",
    # fluid only: the law-oracle told the terms of the force, not their wave numbers
    "law-oracle-wavenumbers": f"{_HERE}.fluid_oracle:FluidWavenumberOracle",
}

# Calibration roles (the shared interface of `discoverygym calibrate`): the oracle does
# the science with privileged knowledge of the law's form; the normal-physics baselines
# are honest science under the standard law (they must fail altered laws under the
# default protocol); the trivial ones answer from one measurement or none.
CALIBRATION = {
    "oracle": ["law-oracle"],
    "baselines": ["newtonian", "navier-stokes", "schrodinger", "empirical"],
    "no_science": ["last-seen", "persistence", "ballistic"],
    "trivial": ["uniform"],
}

__all__ = ["AGENTS", "CALIBRATION"]
