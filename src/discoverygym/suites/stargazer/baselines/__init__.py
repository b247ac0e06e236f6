"""Scripted agents of the stargazer suite: `AGENTS` maps each name to "module:class";
`discoverygym run stargazer --agent NAME` finds them here."""

from .agents import AGENTS

__all__ = ["AGENTS"]
