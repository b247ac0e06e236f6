"""Scripted agents of the mad suite: `AGENTS` maps each name to "module:class";
`discoverygym run mad --agent NAME` finds them here."""

from .classical import AGENTS as _PREDICTION_AGENTS
from .law_describers import AGENTS as _LAW_AGENTS

AGENTS = {**_PREDICTION_AGENTS, **_LAW_AGENTS,
          "law-oracle": "discoverygym.suites.mad.baselines.law_oracle:LawOracle",
          # fluid only: the law-oracle told the terms of the force, not their wave numbers
          "law-oracle-wavenumbers":
              "discoverygym.suites.mad.baselines.fluid_oracle:FluidWavenumberOracle"}

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
