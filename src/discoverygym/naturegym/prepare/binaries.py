"""Two-body trajectories under an altered force law or with linear drag (the data of
`gravity-force-law` and `binary-drag-timescale`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

G = 6.674e-11
MSUN_KG = 1.989e30


def two_body(m1_kg: float, m2_kg: float, r0_m: float, e: float, t_end_s: float, n: int,
             alpha: float = 0.0, tau_s: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions of both stars (barycentre at rest at the origin) under
    F = G m1 m2 / r^(2+alpha) and optional linear drag a_i = -v_i/tau, sampled at n
    uniform times in [0, t_end]. Integrated in relative coordinates with DOP853."""
    mu = G * (m1_kg + m2_kg)
    v_c = np.sqrt(mu / r0_m ** (1 + alpha))  # circular speed of the law in use
    # start at periastron of an orbit with eccentricity ~e: tangential speed sqrt(1+e) v_c
    y0 = np.array([r0_m, 0.0, 0.0, v_c * np.sqrt(1 + e)])

    def rhs(_t, y):
        x, yy, vx, vy = y
        r = np.hypot(x, yy)
        a = -mu / r ** (3 + alpha)
        ax, ay = a * x, a * yy
        if tau_s is not None:
            ax -= vx / tau_s
            ay -= vy / tau_s
        return [vx, vy, ax, ay]

    t = np.linspace(0.0, t_end_s, n)
    sol = solve_ivp(rhs, (0.0, t_end_s), y0, t_eval=t, method="DOP853", rtol=1e-11, atol=1e-3)
    rel = sol.y[:2].T
    f1, f2 = m2_kg / (m1_kg + m2_kg), m1_kg / (m1_kg + m2_kg)
    return t, np.hstack([-f1 * rel, f2 * rel])


def _write_trajectory(path: Path, t: np.ndarray, pos: np.ndarray, rng: np.random.Generator,
                      rel_noise: float) -> None:
    scale = np.abs(pos).max()
    noisy = pos + rng.normal(0.0, rel_noise * scale, pos.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "time_s,star1_x_m,star1_y_m,star2_x_m,star2_y_m"
    np.savetxt(path, np.column_stack([t, noisy]), delimiter=",", header=header, comments="",
               fmt="%.10e")


def _write_answer(out: Path, name: str, key: str, value: float) -> None:
    folder = out / "ground_truth" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "answer.json").write_text(json.dumps({key: value}) + "\n")


def force_law(out: Path, _inputs: Path, args: dict[str, Any]) -> None:
    """args: seed, samples, noise (relative), systems {name: m1, m2 (solar masses), r0
    (m), e, alpha, orbits}; the systems are drawn in the order given."""
    rng = np.random.default_rng(args["seed"])
    for name, s in args["systems"].items():
        mu = G * (s["m1"] + s["m2"]) * MSUN_KG
        a_guess = s["r0"] / (1 - s["e"])
        period = 2 * np.pi * np.sqrt(a_guess**3 / mu)
        t, pos = two_body(s["m1"] * MSUN_KG, s["m2"] * MSUN_KG, s["r0"], s["e"],
                          s["orbits"] * period, args["samples"], alpha=s["alpha"])
        _write_trajectory(out / "data" / name / "trajectory.csv", t, pos, rng, args["noise"])
        _write_answer(out, name, "alpha", s["alpha"])


def drag(out: Path, _inputs: Path, args: dict[str, Any]) -> None:
    """args: seed, samples, noise (relative), systems {name: m1, m2 (solar masses), r0
    (m), e, tau (s), t_end (s)}; the systems are drawn in the order given."""
    rng = np.random.default_rng(args["seed"])
    for name, s in args["systems"].items():
        t, pos = two_body(s["m1"] * MSUN_KG, s["m2"] * MSUN_KG, s["r0"], s["e"], s["t_end"],
                          args["samples"], tau_s=s["tau"])
        _write_trajectory(out / "data" / name / "trajectory.csv", t, pos, rng, args["noise"])
        _write_answer(out, name, "tau_s", s["tau"])
