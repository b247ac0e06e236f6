"""The `mad` suite: MaD Physics (Jain et al., Google DeepMind, arXiv:2605.10820, 2026).

An agent buys noisy measurements of a simulated world whose laws may be altered, under a
budget, then predicts the world at later times (or infers a parameter of the law).
Worlds plug in through `worlds.World`; the measure-then-predict episode's base class
lives in `episode.py` and its variants (predict, infer, visual, icl) in `variants.py`,
the suite (tasks, options, plan) in `suite.py`. See
README.md in this folder."""

import os

from ...core.suite import SuiteEntry, lazy_exports

# On a GPU, JAX would grab 75% of its memory in every process that uses it, so a second
# runner worker would run out at once. Allocate on demand instead (set here, before any
# module of the suite imports JAX; an explicit setting by the user wins).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

#: The suite's row in the registry, listed in discoverygym.suites.ENTRIES under NAME.
NAME = "mad"
ENTRY = SuiteEntry("discoverygym.suites.mad:MadSuite", "Mad",
                   agents="discoverygym.suites.mad.baselines",
                   options=("world", "law", "variant", "trials", "protocol", "n_particles", "dim",
                            "inertia_decay", "t_max", "query_horizon", "resolution",
                            "initial_state"),
                   requires=("jax",))

# The suite's classes load on first use, so that reading the row stays cheap.
__getattr__ = lazy_exports(__name__, {"MadSuite": ".suite", "resolve_protocol": ".suite"})
__all__ = ["ENTRY", "NAME", "MadSuite", "resolve_protocol"]
