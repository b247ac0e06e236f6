"""The verifiers environment `discoverygym-rl` (`vf-eval discoverygym-rl ...`).

The one door outside `discoverygym/doors/`, because the library forces it: verifiers
loads an environment id as a top-level module (`discoverygym-rl` -> `discoverygym_rl`)
that exports one Taskset (and here the default Harness) through `__all__`. So this is a
shim; the door itself is `discoverygym.doors.verifiers`."""

from discoverygym.doors.verifiers.taskset import DiscoveryHarness, DiscoveryTaskset

__all__ = ["DiscoveryHarness", "DiscoveryTaskset"]
