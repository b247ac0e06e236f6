"""stargazer: radial-velocity exoplanet discovery (see README.md in this folder)."""

from .suite import StargazerSuite

__all__ = ["StargazerSuite"]
