"""The gravity suite (Gravity-Bench-v1 family): two-body worlds simulated with REBOUND."""

from .suite import GravitySuite

__all__ = ["GravitySuite"]
