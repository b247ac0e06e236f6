"""The `mad` suite: MaD Physics (Jain et al., Google DeepMind, arXiv:2605.10820, 2026).

An agent buys noisy measurements of a simulated world whose laws may be altered, under a
budget, then predicts the world at later times (or infers a parameter of the law).
Worlds plug in through `worlds.World`; the measure-then-predict episode's base class
lives in `episode.py` and its variants (predict, infer, visual, icl) in `variants.py`,
the suite (tasks, options, plan) in `suite.py`. See
README.md in this folder."""

from .suite import MadSuite, resolve_protocol

__all__ = ["MadSuite", "resolve_protocol"]
