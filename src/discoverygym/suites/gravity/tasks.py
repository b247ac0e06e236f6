"""The 50 tasks: what each asks, its answer type and SI unit, the published worlds it
is paired with (206 pairs in all), its budget-obs threshold, the kinds of world it
applies to (for procedural worlds) and the function that gives its truth."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from . import truths as T
from .worlds import WorldSpec

FULL_OBS_THRESHOLD = 0.05  # relative error allowed for every task under full-obs

ABC = ("A", "B", "C")
ABC_PM = (*ABC, "PM1", "PM2")
ABC_PM_UNITS = (*ABC_PM, "B-yrAU", "B-cgs")
MODIFIED = ("MG197", "MG203", "MG197-PM")
DRAG = ("DRAG1", "DRAG2", "DRAG2-PM")


# ---- kinds of world a task applies to ---------------------------------------------------
@dataclass(frozen=True)
class WorldKind:
    """A named predicate over worlds (used to pair tasks with procedural worlds)."""

    name: str
    test: Callable[[WorldSpec], bool]

    def __call__(self, world: WorldSpec) -> bool:
        return self.test(world)


BOUND_NEWTONIAN = WorldKind(
    "bound Newtonian (no drag, no modified law)",
    lambda w: w.conservative_newtonian and w.is_bound)
BOUND_NEWTONIAN_AT_REST = WorldKind(
    "bound Newtonian with the barycentre at rest (no drift)",
    lambda w: w.conservative_newtonian and w.is_bound and not w.has_drift)
NEWTONIAN = WorldKind(
    "Newtonian without drag (bound or unbound)", lambda w: w.conservative_newtonian)
BOUND_NO_DRAG = WorldKind(
    "bound, no drag (Newtonian or modified law)", lambda w: w.is_bound and not w.has_drag)
VIRIAL = WorldKind(
    "bound, Newtonian law, and either drag or no drift",
    lambda w: w.is_bound and w.newtonian and (w.has_drag or not w.has_drift))
WITH_DRAG = WorldKind("with linear drag", lambda w: w.has_drag)
WITH_MODIFIED_LAW = WorldKind("with a modified gravity law", lambda w: not w.newtonian)


@dataclass(frozen=True)
class Task:
    """One task. `question` is the prompt's question, with the quantity's definition."""

    id: str
    question: str
    answer_type: str  # "number" | "boolean"
    unit: str  # SI unit of the answer ('' for dimensionless or boolean)
    worlds: tuple[str, ...]  # published worlds it is paired with
    budget_threshold: float  # relative error allowed under budget-obs-N (published)
    kind: WorldKind
    truth: Callable[[WorldSpec], float | bool]
    # budget-obs threshold of the leak-free setup, where the published one lets a
    # guess from the window pass (None: the published threshold)
    leak_free_threshold: float | None = None
    # a yes/no question about boundness: under the leak-free setup each episode asks it
    # of the world or of its mirrored twin with even odds (worlds.mirrored_boundness)
    balanced_boundness: bool = False
    # a yes/no question about the law: on a procedural world the leak-free setup asks it
    # of the world or of its other-law twin with even odds (worlds.mirrored_law); the
    # published pairs are balanced already (three Newtonian worlds, three modified)
    balanced_law: bool = False

    def threshold(self, protocol: str, setup: str = "leak-free") -> float:
        """Relative-error threshold under `protocol` and `setup` (booleans must be
        exact)."""
        if protocol == "full-obs":
            return FULL_OBS_THRESHOLD
        return self.budget_threshold_for(setup)

    def budget_threshold_for(self, setup: str) -> float:
        """The budget-obs threshold under `setup` ("leak-free" or "published")."""
        if setup == "leak-free" and self.leak_free_threshold is not None:
            return self.leak_free_threshold
        return self.budget_threshold

    def applies_to(self, world: WorldSpec) -> bool:
        return self.kind(world)


def _num(id_, question, unit, worlds, threshold, kind, truth) -> Task:
    return Task(id_, question, "number", unit, tuple(worlds), threshold / 100.0, kind, truth)


def _bool(id_, question, worlds, kind, truth, **extra) -> Task:
    return Task(id_, question, "boolean", "", tuple(worlds), 0.0, kind, truth, **extra)


def _star(star: int) -> str:
    return f"star{star}"


def _per_star(make: Callable[[int], Task], stars=(1, 2)) -> list[Task]:
    return [make(s) for s in stars]


_TASKS: list[Task] = [
    _num("roche_lobe_radius",
         "What is the Roche-lobe radius of star1? Use Eggleton's (1983) formula "
         "r_L / a = 0.49 q^(2/3) / (0.6 q^(2/3) + ln(1 + q^(1/3))) with q = m1/m2 and a the "
         "semi-major axis of the relative orbit.", "m", ["ELL"], 5, BOUND_NEWTONIAN,
         T.roche_lobe_radius),
    _num("modified_gravity_power_law",
         "The attraction between the stars is not Newtonian but F = G m1 m2 / r^(2 + alpha) "
         "with r in metres and G as given. What is alpha?", "", MODIFIED, 70, WITH_MODIFIED_LAW,
         T.modified_gravity_alpha),
    _num("linear_drag",
         "Each star feels, besides gravity, a linear drag a_i = -v_i / tau (v_i its velocity "
         "in the frame of the data). What is the drag timescale tau?", "s", DRAG, 15,
         WITH_DRAG, T.linear_drag_timescale),
    _num("time_fraction_acceleration_below_mean",
         "Over one whole orbit, what fraction of the time is the magnitude of star1's "
         "acceleration below its time average over that orbit?", "", ABC, 15, BOUND_NEWTONIAN,
         T.time_fraction_acceleration_below_mean),
    _num("apoastron", "What is the apoastron distance, the largest separation between the "
         "stars, a (1 + e)?", "m", ABC_PM, 5, BOUND_NEWTONIAN, T.apoastron),
    _num("area_swept_over_time_apo",
         "At apoastron, at what rate does the separation vector (star1 to star2) sweep out "
         "area?", "m^2/s", ABC, 15, BOUND_NEWTONIAN, T.areal_velocity),
    _num("area_swept_over_time_peri",
         "At periastron, at what rate does the separation vector (star1 to star2) sweep out "
         "area?", "m^2/s", ABC, 15, BOUND_NEWTONIAN, T.areal_velocity),
    *_per_star(lambda s: _num(
        f"avg_distance_COM_star{s}",
        f"What is the time-averaged distance of {_star(s)} from the centre of mass of the "
        "system, averaged over one whole orbit?", "m", ABC, 15, BOUND_NEWTONIAN_AT_REST,
        partial(T.avg_distance_com_star, star=s))),
    _num("eccentricity", "What is the eccentricity of the orbit?", "", (*ABC_PM, "ELL"), 5,
         BOUND_NEWTONIAN, T.eccentricity),
    _bool("kepler_3rd_law",
          "Does Kepler's third law, P^2 / a^3 = 4 pi^2 / (G (m1 + m2)) with P the period and "
          "a the semi-major axis of the relative orbit, hold for this system (within 5 %)? "
          "Answer true or false.", (*ABC, *MODIFIED), BOUND_NO_DRAG, T.kepler_third_law_holds,
          balanced_law=True),
    _num("mass_largest_star", "What is the mass of the heavier star?", "kg", ABC, 5,
         BOUND_NEWTONIAN, T.mass_largest_star),
    *_per_star(lambda s: _num(
        f"max_acceleration_star{s}",
        f"What is the largest magnitude of {_star(s)}'s acceleration?", "m/s^2",
        ABC_PM if s == 1 else ABC, 70, BOUND_NEWTONIAN,
        partial(T.max_acceleration_star, star=s))),
    *_per_star(lambda s: _num(
        f"max_angular_velocity_star{s}",
        f"What is the largest angular velocity of {_star(s)} about the centre of mass "
        "(h / r^2, with h the specific angular momentum and r the separation of the "
        "relative orbit)?", "rad/s", ABC_PM if s == 1 else ABC, 20, BOUND_NEWTONIAN,
        partial(T.max_angular_velocity_star, star=s))),
    *_per_star(lambda s: _num(
        f"max_momentum_star{s}",
        f"What is the largest magnitude of {_star(s)}'s linear momentum, in the frame of the "
        "data?", "kg m/s", ABC_PM if s == 1 else ABC, 20, BOUND_NEWTONIAN,
        partial(T.max_momentum_star, star=s))),
    *_per_star(lambda s: _num(
        f"max_velocity_star{s}",
        f"What is the largest speed of {_star(s)}, in the frame of the data?", "m/s",
        ABC_PM_UNITS if s == 1 else ABC, 20, BOUND_NEWTONIAN,
        partial(T.max_velocity_star, star=s))),
    *_per_star(lambda s: _num(
        f"min_acceleration_star{s}",
        f"What is the smallest magnitude of {_star(s)}'s acceleration?", "m/s^2", ABC, 5,
        BOUND_NEWTONIAN, partial(T.min_acceleration_star, star=s))),
    *_per_star(lambda s: _num(
        f"min_angular_velocity_star{s}",
        f"What is the smallest angular velocity of {_star(s)} about the centre of mass "
        "(h / r^2, with h the specific angular momentum and r the separation of the "
        "relative orbit)?", "rad/s", ABC, 5, BOUND_NEWTONIAN,
        partial(T.min_angular_velocity_star, star=s))),
    *_per_star(lambda s: _num(
        f"min_momentum_star{s}",
        f"What is the smallest magnitude of {_star(s)}'s linear momentum, in the frame of "
        "the data?", "kg m/s", ABC_PM_UNITS if s == 1 else ABC, 5, BOUND_NEWTONIAN,
        partial(T.min_momentum_star, star=s))),
    *_per_star(lambda s: _num(
        f"min_velocity_star{s}",
        f"What is the smallest speed of {_star(s)}, in the frame of the data?", "m/s", ABC, 5,
        BOUND_NEWTONIAN, partial(T.min_velocity_star, star=s))),
    _num("multiply_mass_period",
         "Suppose star1 held almost all the mass (m1 >> m2). By what factor X would star1's "
         "mass have to be multiplied for the orbit, same size and shape, to have a period of "
         "21 days (1 day = 86400 s)? Equivalently X = (P / 21 days)^2.", "", ABC, 5,
         BOUND_NEWTONIAN, T.multiply_mass_period),
    *_per_star(lambda s: _num(
        f"orbital_area_star{s}",
        f"What is the area enclosed by {_star(s)}'s elliptical orbit about the centre of "
        "mass?", "m^2", ABC, 5, BOUND_NEWTONIAN_AT_REST,
        partial(T.orbital_area_star, star=s))),
    _num("periastron", "What is the periastron distance, the smallest separation between the "
         "stars, a (1 - e)?", "m", (*ABC, "ELL1"), 5, BOUND_NEWTONIAN, T.periastron),
    _num("period", "What is the orbital period?", "s", ABC_PM_UNITS, 5, BOUND_NEWTONIAN,
         T.period),
    _num("reduced_mass", "What is the reduced mass m1 m2 / (m1 + m2)?", "kg", ABC_PM_UNITS, 5,
         BOUND_NEWTONIAN, T.reduced_mass),
    _num("semi_major_axis", "What is the semi-major axis of the relative orbit (star2 about "
         "star1)?", "m", ABC_PM_UNITS, 5, BOUND_NEWTONIAN, T.semi_major_axis),
    *_per_star(lambda s: _num(
        f"semi_major_axis_star{s}",
        f"What is the semi-major axis of {_star(s)}'s orbit about the centre of mass?", "m",
        ABC_PM_UNITS if s == 1 else ABC, 5, BOUND_NEWTONIAN,
        partial(T.semi_major_axis_star, star=s))),
    _num("semi_minor_axis", "What is the semi-minor axis of the relative orbit (star2 about "
         "star1)?", "m", ABC_PM, 5, BOUND_NEWTONIAN, T.semi_minor_axis),
    *_per_star(lambda s: _num(
        f"semi_minor_axis_star{s}",
        f"What is the semi-minor axis of {_star(s)}'s orbit about the centre of mass?", "m",
        ABC, 5, BOUND_NEWTONIAN, partial(T.semi_minor_axis_star, star=s))),
    _num("specific_angular_momentum",
         "What is the magnitude of the specific angular momentum |r x v| of the relative "
         "orbit (r, v: position and velocity of star2 relative to star1)?", "m^2/s", ABC, 15,
         BOUND_NEWTONIAN, T.specific_angular_momentum),
    _num("total_energy",
         "What is the total energy K + U of the system (kinetic energy of both stars plus "
         "the gravitational potential energy), in the frame of the data, averaged over the "
         "observation window?", "J", ("UNB", *ABC_PM), 40, NEWTONIAN, T.total_energy),
    _num("total_mass", "What is the total mass m1 + m2?", "kg", ABC, 5, BOUND_NEWTONIAN,
         T.total_mass),
    _num("mass_ratio", "What is the mass ratio m1 / m2?", "", ABC, 5, BOUND_NEWTONIAN,
         T.mass_ratio),
    _bool("virial_theorem",
          "Does the virial theorem 2<K> + <U> = 0 (time averages over whole orbits) hold for "
          "this system, to within 0.1 % of |<U>|? Answer true or false.", (*ABC, *DRAG),
          VIRIAL, T.virial_theorem_holds),
    *[replace(_num(f"travel_time_{pct}pct_path",
                   f"Starting at a periastron passage, how long does star1 take to travel "
                   f"{pct} % of the length of its closed orbital path about the centre of "
                   "mass?", "s", ABC, threshold, BOUND_NEWTONIAN_AT_REST,
                   partial(T.travel_time_path_fraction, fraction=pct / 100.0)),
              leak_free_threshold=leak_free)
      # 20 %: the published 70 % lets window / 10 pass; see README, Calibration
      for pct, threshold, leak_free in ((20, 70, 0.10), (70, 15, None))],
    _bool("is_bound", "Is the system gravitationally bound? Answer true or false.",
          (*ABC_PM_UNITS, "UNB"), NEWTONIAN, T.is_bound, balanced_boundness=True),
    *_per_star(lambda s: _num(
        f"mass_star{s}", f"What is the mass of {_star(s)}?", "kg",
        ABC_PM_UNITS if s == 1 else ABC_PM, 5, BOUND_NEWTONIAN, partial(T.mass_star, star=s))),
]

TASKS: dict[str, Task] = {t.id: t for t in _TASKS}
TASK_IDS: tuple[str, ...] = tuple(TASKS)


def published_pairs() -> list[tuple[str, str]]:
    """The 206 (task id, world id) pairs of Gravity-Bench-v1, in table order."""
    return [(task.id, world) for task in _TASKS for world in task.worlds]


def tasks_for_world(world: WorldSpec) -> list[Task]:
    """Every task that applies to `world` (used for procedural worlds)."""
    return [task for task in _TASKS if task.applies_to(world)]
