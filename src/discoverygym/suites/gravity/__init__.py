"""The gravity suite (Gravity-Bench-v1 family): two-body worlds simulated with REBOUND."""

from ...core.suite import SuiteEntry, lazy_exports

#: The suite's row in the registry, listed in discoverygym.suites.ENTRIES under NAME.
NAME = "gravity"
ENTRY = SuiteEntry("discoverygym.suites.gravity:GravitySuite", "Gravity",
                   agents="discoverygym.suites.gravity.baselines",
                   options=("protocol", "tasks", "worlds", "world_seed", "world_seeds",
                            "setup"),
                   conversation_expert=("discoverygym.suites.gravity.baselines."
                                        "conversation:EXPERT"))

# The suite's classes load on first use, so that reading the row stays cheap.
__getattr__ = lazy_exports(__name__, {"GravitySuite": ".suite"})
__all__ = ["ENTRY", "NAME", "GravitySuite"]
