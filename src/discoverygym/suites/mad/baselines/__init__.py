"""Scripted agents of the mad suite: `AGENTS` maps each name to "module:class";
`discoverygym run mad --agent NAME` finds them here."""

from .classical import AGENTS

__all__ = ["AGENTS"]
