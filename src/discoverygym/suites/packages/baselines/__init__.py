"""Scripted agents of the packages suite: `AGENTS` maps each name to "module:class";
`discoverygym run packages --agent NAME` finds them here."""

from .solvers import AGENTS

__all__ = ["AGENTS"]
