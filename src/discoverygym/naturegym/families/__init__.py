"""The families `discoverygym package generate` draws packages from, by name."""

from __future__ import annotations

from .base import Draw, Family, Metric, Reference
from .physical_modeling.fluid import FluidForecast
from .physical_modeling.gravity import GravityDrag, GravityForceLaw
from .physical_modeling.ignition import IgnitionDelay
from .physical_modeling.radial_velocity import RadialVelocityActivity

FAMILIES: dict[str, type[Family]] = {
    f.name: f for f in (GravityForceLaw, GravityDrag, RadialVelocityActivity,
                           FluidForecast, IgnitionDelay)
}


def get_family(name: str) -> Family:
    """The family called `name`; a ValueError names the known ones."""
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; families: {', '.join(FAMILIES)}")
    return FAMILIES[name]()


def family_for_task(task_name: str) -> Family | None:
    """The generated family whose packages carry this task name, if any."""
    for family in FAMILIES.values():
        if family.task_name == task_name:
            return family()
    return None


__all__ = ["FAMILIES", "Draw", "Family", "Metric", "Reference", "family_for_task", "get_family"]
