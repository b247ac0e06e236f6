"""stargazer: radial-velocity exoplanet discovery (see README.md in this folder)."""

from ...core.suite import SuiteEntry, lazy_exports

#: The suite's row in the registry, listed in discoverygym.suites.ENTRIES under NAME.
NAME = "stargazer"
ENTRY = SuiteEntry("discoverygym.suites.stargazer:StargazerSuite", "Stargazer",
                   agents="discoverygym.suites.stargazer.baselines",
                   options=("tier", "mode", "bank_seed", "tasks_from", "tasks", "real_setup"),
                   requires=("astropy", "celerite2"))

# The suite's classes load on first use, so that reading the row stays cheap.
__getattr__ = lazy_exports(__name__, {"StargazerSuite": ".suite"})
__all__ = ["ENTRY", "NAME", "StargazerSuite"]
