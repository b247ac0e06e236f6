"""Scripted agents of the tpbench suite: `AGENTS` maps each name to "module:class";
`discoverygym run tpbench --agent NAME` finds them here."""

from .reference import AGENTS

__all__ = ["AGENTS"]
