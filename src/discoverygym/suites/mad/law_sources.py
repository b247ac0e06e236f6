"""Reference answers to `describe_law`, as Python source: normal physics and the true
law of a world. They are the law score's baselines (normal physics scores ~0 in every
altered world, the true law ~1 in every world; `tests/suites/mad/test_mad_law_rollout.py`,
`bench/mad_law_rollout.py --table`) and what a privileged oracle would describe. The
true source is built from the world's hidden law: never show it to an agent."""

from __future__ import annotations

from typing import Any

from ...physics import fluid_solver as fs
from . import constants as C

_PAIR_FORCE = ("import numpy as np\n"
               "def pair_force(m_i, m_j, r_vec):\n"
               "    r_vec = np.asarray(r_vec, dtype=float)\n"
               "    r = np.sqrt(np.sum(r_vec**2, axis=-1))\n"
               "    magnitude = {magnitude}\n"
               "    return (np.asarray(m_i) * np.asarray(m_j) * magnitude / r)[..., None] * r_vec\n")
_ACCELERATION = ("def acceleration(force, mass, memory):\n"
                 "    kappa, decay = {kappa!r}, {decay!r}\n"
                 "    m = (kappa / mass)[:, None, None] * memory + np.eye(force.shape[-1])\n"
                 "    a = np.linalg.solve(m, force[..., None])[..., 0] / mass[:, None]\n"
                 "    return a, -decay * memory + a[:, :, None] * a[:, None, :]\n")
_BODY_FORCE = ("import numpy as np\n"
               "def body_force(u, v, omega):\n"
               "    c = {c}\n"
               "    return [c * v, -c * u]\n")
_OUTCOME = ("import numpy as np\n"
            "def outcome_weight(amplitude):\n"
            "    return np.asarray(amplitude, dtype=float) ** {power!r}\n")
_CORRELATION = ("def initial_correlation(x1, y1, x2, y2):\n"
                "    return np.exp(-{coupling!r} * ((x1 - x2)**2 + (y1 - y2)**2))\n")

# Classical laws -> |F| / (m_i m_j) as a function of r (NumPy text).
_MAGNITUDES = {
    "newton": "1.0 / r**2",
    "inverse-r": "1.0 / r",
    "ripple": (f"1.0 / r**2 * (1.0 + {C.RIPPLE_AMPLITUDE!r} * np.sin(2 * np.pi * r / "
               f"{C.RIPPLE_WAVELENGTH!r} + {C.RIPPLE_PHASE!r}))"),
}
_CLASSICAL_FORCE = {"normal": "newton", "kappa10": "newton", "kappa20": "newton",
                    "inv-r": "inverse-r", "ripple": "ripple", "combined": "inverse-r"}


def normal_law_source(world_name: str) -> str:
    """Normal physics as a `describe_law` answer for world `world_name`."""
    if world_name == "classical":
        return _PAIR_FORCE.format(magnitude=_MAGNITUDES["newton"])
    if world_name == "fluid":
        return _BODY_FORCE.format(c="0.0 * omega")
    if world_name == "quantum":
        return _OUTCOME.format(power=2.0)
    raise ValueError(f"no law source for world {world_name!r}")


def true_law_source(world: Any) -> str:
    """The world's true law as a `describe_law` answer (privileged)."""
    if world.name == "classical":
        force = "newton" if world.law.startswith("kappa=") else _CLASSICAL_FORCE[world.law]
        source = _PAIR_FORCE.format(magnitude=_MAGNITUDES[force])
        if world.kappa != 0:
            source += _ACCELERATION.format(kappa=world.kappa, decay=world.inertia_decay)
        return source
    if world.name == "fluid":
        from .fluid_world import LAWS

        return _BODY_FORCE.format(c=_modulation_text(LAWS[world.law]))
    if world.name == "quantum":
        source = _OUTCOME.format(power=world.born_power)
        if world.coupling != 0:
            source += _CORRELATION.format(coupling=world.coupling)
        return source
    raise ValueError(f"no law source for world {world.name!r}")


def _modulation_text(modulation: fs.Modulation | None) -> str:
    """C(u, v, omega) of a fluid law as NumPy text."""
    if modulation is None:
        return "0.0 * omega"
    if isinstance(modulation, fs.VelocityModulation):
        return f"{modulation.gamma!r} * np.sin({modulation.beta!r} * (u * u + v * v))"
    if isinstance(modulation, fs.VorticityModulation):
        return f"{modulation.gamma!r} * np.cos({modulation.beta!r} * omega)"
    if isinstance(modulation, fs.CombinedModulation):
        return (f"{modulation.alpha!r} * ({_modulation_text(modulation.first)}) + "
                f"{1.0 - modulation.alpha!r} * ({_modulation_text(modulation.second)})")
    raise ValueError(f"no source for the modulation {modulation!r}")
