"""Scripted agents of the gravity suite: `AGENTS` maps each name to "module:class";
`discoverygym run gravity --agent NAME` finds them here."""

from .expert import AGENTS

__all__ = ["AGENTS"]
