"""The families `discoverygym package generate` draws packages from, by name."""

from __future__ import annotations

from .base import Draw, Family, Metric, Reference
from .gravity import GravityDrag, GravityForceLaw
from .radial_velocity import RadialVelocityActivity

FAMILIES: dict[str, type[Family]] = {
    f.name: f for f in (GravityForceLaw, GravityDrag, RadialVelocityActivity)
}


def get_family(name: str) -> Family:
    """The family called `name`; a ValueError names the known ones."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; families: {', '.join(FAMILIES)}")
    return FAMILIES[name]()


__all__ = ["FAMILIES", "Draw", "Family", "Metric", "Reference", "get_family"]
