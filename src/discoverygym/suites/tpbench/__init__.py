"""tpbench: theoretical-physics problems whose answers are Python functions, verified by
running them in isolation on hidden test inputs against the expert's function.

After TPBench (Chung, Gao, Kvasiuk, Li, Münchmeyer, Rudolph, Sala, Tadepalli, 2025).
See README.md in this folder for the format, levels and scoring."""

from ...core.suite import SuiteEntry, lazy_exports

#: The suite's row in the registry, listed in discoverygym.suites.ENTRIES under NAME.
NAME = "tpbench"
ENTRY = SuiteEntry("discoverygym.suites.tpbench:TPBenchSuite", "TPBench",
                   cli="discoverygym.suites.tpbench.cli:tpbench_app",
                   cli_name="tpbench",
                   agents="discoverygym.suites.tpbench.baselines",
                   options=("level", "domain", "problems"))

# The suite's classes load on first use, so that reading the row stays cheap.
__getattr__ = lazy_exports(__name__, {"TPBenchSuite": ".suite", "parse_levels": ".suite",
                                      "problem_set": ".suite"})
__all__ = ["ENTRY", "NAME", "TPBenchSuite", "parse_levels", "problem_set"]
