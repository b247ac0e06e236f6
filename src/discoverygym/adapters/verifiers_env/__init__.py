"""The verifiers (Prime Intellect, `verifiers.v1`) door: the `[rl]` extra."""

from .taskset import DiscoveryHarness, DiscoveryTask, DiscoveryTaskset, DiscoveryTasksetConfig

__all__ = ["DiscoveryHarness", "DiscoveryTask", "DiscoveryTaskset", "DiscoveryTasksetConfig"]
