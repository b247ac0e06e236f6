"""The families `discoverygym package generate` draws packages from, by name.

Families live by domain (NatureBench's six): `families/<domain folder>/<family>.py`,
each registered here. `family_rows` is what `package generate --list` shows: each
family's domain, task type, extra and whether that extra is installed."""

from __future__ import annotations

from typing import Any

from .base import (
    DOMAINS,
    OUTPUT_ROLES,
    TASK_TYPES,
    Draw,
    ExtraMissing,
    Family,
    Metric,
    Reference,
)
from .biomedical_modeling.epidemic_forecast import EpidemicForecast
from .biomedical_modeling.pk_population import PopulationPharmacokinetics
from .cellular_omics.grn import GeneNetworkInference
from .molecular_design.ionisation_energy import IonisationEnergy
from .physical_modeling.fluid import FluidForecast
from .physical_modeling.gravity import GravityDrag, GravityForceLaw
from .physical_modeling.ignition import IgnitionDelay
from .physical_modeling.radial_velocity import RadialVelocityActivity
from .protein_biology.potts_fitness import PottsFitness
from .relational_reasoning.communities import CommunityRecovery
from .relational_reasoning.link_prediction import LinkPrediction

#: The folder of each domain under families/.
DOMAIN_FOLDERS = {domain: domain.replace(" ", "_") for domain in DOMAINS}

FAMILIES: dict[str, type[Family]] = {
    f.name: f for f in (GravityForceLaw, GravityDrag, RadialVelocityActivity,
                           FluidForecast, IgnitionDelay, IonisationEnergy,
                           LinkPrediction, CommunityRecovery, EpidemicForecast,
                           GeneNetworkInference, PottsFitness,
                           PopulationPharmacokinetics)
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


def family_rows() -> list[dict[str, Any]]:
    """One row per family: name, domain, task type, extra, installed, version, task."""
    rows = []
    for name, cls in FAMILIES.items():
        family = cls()
        rows.append({"family": name, "domain": family.domain,
                     "task_type": family.task_type, "extra": family.extra or "-",
                     "installed": not family.missing_modules(),
                     "version": family.version, "task": family.task_name})
    return rows


__all__ = ["DOMAINS", "DOMAIN_FOLDERS", "FAMILIES", "OUTPUT_ROLES", "TASK_TYPES", "Draw",
           "ExtraMissing", "Family", "Metric", "Reference", "family_for_task",
           "family_rows", "get_family"]
