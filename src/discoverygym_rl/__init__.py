"""The verifiers environment `discoverygym-rl` (`vf-eval discoverygym-rl ...`): a
verifiers taskset id names a top-level module that exports one Taskset (and here the
default Harness) through `__all__`."""

from discoverygym.adapters.verifiers_env.taskset import DiscoveryHarness, DiscoveryTaskset

__all__ = ["DiscoveryHarness", "DiscoveryTaskset"]
