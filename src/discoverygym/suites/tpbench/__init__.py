"""tpbench: theoretical-physics problems whose answers are Python functions, verified by
running them in isolation on hidden test inputs against the expert's function.

After TPBench (Chung, Gao, Kvasiuk, Li, Münchmeyer, Rudolph, Sala, Tadepalli, 2025).
See README.md in this folder for the format, levels and scoring."""

from .suite import TPBenchSuite, parse_levels, problem_set

__all__ = ["TPBenchSuite", "parse_levels", "problem_set"]
