"""Build the data of the shipped task packages (deterministic; run once, output committed).

    python tools/build_packages.py [--only NAME]

Each builder writes problem/data/<instance>/..., evaluation/ground_truth/<instance>/...
and the SOTA numbers in metadata.json of a package under
src/discoverygym/suites/packages/catalog/. The prose (README.md, evaluator.py) is
written by hand and kept in git; this script only (re)generates numbers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

CATALOG = Path(__file__).resolve().parent.parent / "src/discoverygym/suites/packages/catalog"
G = 6.674e-11
MSUN = 1.989e30
NOISE = 1e-5  # position noise as a fraction of the orbit's size


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


def write_trajectory(path: Path, t: np.ndarray, pos: np.ndarray, rng: np.random.Generator,
                     rel_noise: float) -> None:
    scale = np.abs(pos).max()
    noisy = pos + rng.normal(0.0, rel_noise * scale, pos.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "time_s,star1_x_m,star1_y_m,star2_x_m,star2_y_m"
    np.savetxt(path, np.column_stack([t, noisy]), delimiter=",", header=header, comments="",
               fmt="%.10e")


def loglog_alpha(t: np.ndarray, pos: np.ndarray) -> float:
    """Our baseline: |a_rel| ∝ r^-(2+alpha), accelerations from Savitzky-Golay derivatives."""
    from scipy.signal import savgol_filter

    rel = pos[:, 2:4] - pos[:, 0:2]
    dt = t[1] - t[0]
    acc = savgol_filter(rel, 15, 4, deriv=2, delta=dt, axis=0)[10:-10]
    r = np.hypot(*rel[10:-10].T)
    slope = np.polyfit(np.log(r), np.log(np.hypot(*acc.T)), 1)[0]
    return float(-slope - 2.0)


def angular_momentum_tau(t: np.ndarray, pos: np.ndarray) -> float:
    """Our baseline: for linear drag the relative orbit's h decays as exp(-t/tau)."""
    rel = pos[:, 2:4] - pos[:, 0:2]
    vel = np.gradient(rel, t, axis=0)
    h = rel[:, 0] * vel[:, 1] - rel[:, 1] * vel[:, 0]
    slope = np.polyfit(t[5:-5], np.log(np.abs(h[5:-5])), 1)[0]
    return float(-1.0 / slope)


def build_force_law() -> None:
    root = CATALOG / "gravity-force-law"
    rng = np.random.default_rng(20261122)
    systems = {"system_1": dict(m1=10.1, m2=5.6, r0=6e10, e=0.5, alpha=0.03, orbits=3.0),
               "system_2": dict(m1=3.1, m2=0.9, r0=9e10, e=0.35, alpha=-0.04, orbits=3.0)}
    baseline_errors = []
    for name, s in systems.items():
        mu = G * (s["m1"] + s["m2"]) * MSUN
        a_guess = s["r0"] / (1 - s["e"])
        period = 2 * np.pi * np.sqrt(a_guess**3 / mu)
        t, pos = two_body(s["m1"] * MSUN, s["m2"] * MSUN, s["r0"], s["e"],
                          s["orbits"] * period, 1500, alpha=s["alpha"])
        write_trajectory(root / "problem/data" / name / "trajectory.csv", t, pos, rng, NOISE)
        noisy = np.loadtxt(root / "problem/data" / name / "trajectory.csv", delimiter=",",
                           skiprows=1)
        baseline_errors.append(abs(loglog_alpha(noisy[:, 0], noisy[:, 1:]) - s["alpha"]))
        gt = root / "evaluation/ground_truth" / name
        gt.mkdir(parents=True, exist_ok=True)
        (gt / "answer.json").write_text(json.dumps({"alpha": s["alpha"]}) + "\n")
    _set_sota(root, dict(zip(systems, baseline_errors, strict=True)))


def build_drag() -> None:
    root = CATALOG / "binary-drag-timescale"
    rng = np.random.default_rng(20261123)
    # About 15 orbits in the window, ~200 samples per orbit.
    systems = {"system_1": dict(m1=7.7, m2=4.9, r0=3e11, e=0.3, tau=1.7e9, t_end=7e8),
               "system_2": dict(m1=2.2, m2=1.4, r0=2.2e11, e=0.2, tau=8.3e8, t_end=5e8)}
    baseline_errors = []
    for name, s in systems.items():
        t, pos = two_body(s["m1"] * MSUN, s["m2"] * MSUN, s["r0"], s["e"], s["t_end"], 3000,
                          tau_s=s["tau"])
        write_trajectory(root / "problem/data" / name / "trajectory.csv", t, pos, rng, NOISE)
        noisy = np.loadtxt(root / "problem/data" / name / "trajectory.csv", delimiter=",",
                           skiprows=1)
        est = angular_momentum_tau(noisy[:, 0], noisy[:, 1:])
        baseline_errors.append(abs(est - s["tau"]) / s["tau"])
        gt = root / "evaluation/ground_truth" / name
        gt.mkdir(parents=True, exist_ok=True)
        (gt / "answer.json").write_text(json.dumps({"tau_s": s["tau"]}) + "\n")
    _set_sota(root, dict(zip(systems, baseline_errors, strict=True)))


def _set_sota(root: Path, values: dict[str, float]) -> None:
    """Write the baseline's metric per instance as the SOTA ("our strongest baseline")."""
    meta_path = root / "metadata.json"
    meta = json.loads(meta_path.read_text())
    for entry in meta["performance_entries"]:
        for metric in entry["metrics"]:
            if metric.get("is_primary"):
                metric["sota_score"] = [{"value": repr(values[entry["dataset_name"]]),
                                         "method": "our strongest baseline"}]
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    print(root.name, {k: f"{v:.3g}" for k, v in values.items()})


BUILDERS = {"gravity-force-law": build_force_law, "binary-drag-timescale": build_drag}

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=sorted(BUILDERS))
    args = parser.parse_args()
    for name, build in BUILDERS.items():
        if args.only in (None, name):
            build()
