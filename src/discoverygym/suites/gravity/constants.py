"""Physical constants and display-unit systems of the gravity suite (one place, SI).

One value of G is used everywhere: on every REBOUND simulation, in the initial
conditions, in the ground truth and in the prompt."""

from __future__ import annotations

from dataclasses import dataclass

G_SI = 6.674e-11  # m^3 kg^-1 s^-2
MSUN_KG = 1.989e30
AU_M = 1.496e11
YEAR_S = 3.154e7
DAY_S = 86400.0
CM_M = 1e-2


@dataclass(frozen=True)
class UnitSystem:
    """How a world is shown: multiply a display value by `time_to_s` / `length_to_m`
    to get SI."""

    name: str
    time: str
    length: str
    time_to_s: float
    length_to_m: float

    def as_dict(self) -> dict[str, object]:
        return {"time": self.time, "length": self.length, "time_to_s": self.time_to_s,
                "length_to_m": self.length_to_m}


UNIT_SYSTEMS: dict[str, UnitSystem] = {
    "SI": UnitSystem("SI", "s", "m", 1.0, 1.0),
    "yr-AU": UnitSystem("yr-AU", "yr", "AU", YEAR_S, AU_M),
    "cgs": UnitSystem("cgs", "s", "cm", 1.0, CM_M),
}
