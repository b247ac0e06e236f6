"""The task table: one estimator per gravity task id, written once for both solution
families (`NumericSolution`, `ModelSolution`); `answer` gives the SI answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .kepler_model import ModelSolution
from .measurements import TARGET_PERIOD_S, eggleton_roche_radius
from .numeric import NumericSolution

Solution = NumericSolution | ModelSolution


def _mass_share(sol: Solution, star: int) -> float:
    """Size of a star's barycentric orbit relative to the relative orbit: the other
    star's mass fraction."""
    m1, m2 = sol.masses
    return (m2 if star == 1 else m1) / (m1 + m2)


def _semi_minor(sol: Solution) -> float:
    return sol.semi_major_axis() * np.sqrt(max(1 - sol.eccentricity() ** 2, 0.0))


def _other_mass(sol: Solution, star: int) -> float:
    m1, m2 = sol.masses
    return m2 if star == 1 else m1


def _own_mass(sol: Solution, star: int) -> float:
    m1, m2 = sol.masses
    return m1 if star == 1 else m2


def _tasks() -> dict[str, Callable[[Solution], Any]]:
    table: dict[str, Callable[[Solution], Any]] = {
        "period": lambda s: s.period(),
        "eccentricity": lambda s: s.eccentricity(),
        "semi_major_axis": lambda s: s.semi_major_axis(),
        "semi_minor_axis": _semi_minor,
        "periastron": lambda s: s.periastron(),
        "apoastron": lambda s: s.apoastron(),
        "specific_angular_momentum": lambda s: s.specific_angular_momentum(),
        "area_swept_over_time_apo": lambda s: 0.5 * s.specific_angular_momentum(),
        "area_swept_over_time_peri": lambda s: 0.5 * s.specific_angular_momentum(),
        "total_mass": lambda s: sum(s.masses),
        "reduced_mass": lambda s: s.masses[0] * s.masses[1] / sum(s.masses),
        "mass_ratio": lambda s: s.masses[0] / s.masses[1],
        "mass_largest_star": lambda s: max(s.masses),
        "multiply_mass_period": lambda s: (s.period() / TARGET_PERIOD_S) ** 2,
        "roche_lobe_radius": lambda s: eggleton_roche_radius(
            s.semi_major_axis(), s.masses[0] / s.masses[1]),
        "time_fraction_acceleration_below_mean":
            lambda s: s.time_fraction_acceleration_below_mean(),
        "travel_time_20pct_path": lambda s: s.travel_time(0.2),
        "travel_time_70pct_path": lambda s: s.travel_time(0.7),
        "total_energy": lambda s: s.total_energy(),
        "is_bound": lambda s: s.is_bound(),
        "virial_theorem": lambda s: s.virial_holds(),
        "kepler_3rd_law": lambda s: s.kepler_third_law_holds(),
        "modified_gravity_power_law": lambda s: s.power_law_alpha(),
        "linear_drag": lambda s: s.drag_timescale(),
    }
    per_star = {
        "mass_star{}": _own_mass,
        "semi_major_axis_star{}": lambda s, k: _mass_share(s, k) * s.semi_major_axis(),
        "semi_minor_axis_star{}": lambda s, k: _mass_share(s, k) * _semi_minor(s),
        "orbital_area_star{}": lambda s, k: np.pi * _mass_share(s, k) ** 2
        * s.semi_major_axis() * _semi_minor(s),
        "avg_distance_COM_star{}": lambda s, k: s.average_distance_from_barycentre(k),
        "max_acceleration_star{}": lambda s, k: s.G * _other_mass(s, k) / s.periastron() ** 2,
        "min_acceleration_star{}": lambda s, k: s.G * _other_mass(s, k) / s.apoastron() ** 2,
        "max_angular_velocity_star{}":
            lambda s, k: s.specific_angular_momentum() / s.periastron() ** 2,
        "min_angular_velocity_star{}":
            lambda s, k: s.specific_angular_momentum() / s.apoastron() ** 2,
        "max_velocity_star{}": lambda s, k: s.speed_extremes(k)[1],
        "min_velocity_star{}": lambda s, k: s.speed_extremes(k)[0],
        "max_momentum_star{}": lambda s, k: _own_mass(s, k) * s.speed_extremes(k)[1],
        "min_momentum_star{}": lambda s, k: _own_mass(s, k) * s.speed_extremes(k)[0],
    }
    for pattern, fn in per_star.items():
        for star in (1, 2):
            table[pattern.format(star)] = (lambda f, k: (lambda s: f(s, k)))(fn, star)
    return table


TASKS: dict[str, Callable[[Solution], Any]] = _tasks()


def answer(task_id: str, solution: Solution) -> float | bool:
    """The SI answer to `task_id` from a solution (numeric or model)."""
    if task_id not in TASKS:
        raise KeyError(f"no estimator for task {task_id!r}")
    value = TASKS[task_id](solution)
    return bool(value) if isinstance(value, bool | np.bool_) else float(value)
