"""The fluid world's law-aware oracle (served as `law-oracle`): a privileged calibration
agent that is told the FORM of the hidden law, none of its numbers. Every fluid law is a
body force f = C(u, v, omega) u_perp; the form says which terms C has:

- `normal`: none (the standard equations; nothing to fit);
- velocity modulation: C = gamma sin(beta_v |u|^2);
- vorticity modulation: C = gamma cos(beta_w omega);
- `combined`: C = a sin(beta_v |u|^2) + b cos(beta_w omega).

The strengths (gamma; a and b) are unknown and fitted. For `law-oracle` the wave numbers
beta_v = 3 and beta_w = pi / 16 belong to the form (they are the paper's, the same in
every world that has the term); `law-oracle-wavenumbers` (`FluidWavenumberOracle`) is
told only the terms and fits the wave numbers too (slower; see the README).

It buys its own measurements under the episode's budget and never reads a hidden
number:
1. t = 0: the vorticity at (0, pi/2) and (pi, pi/2) at high fidelity, which gives the
   measured layer's thickness and amplitude (as the `navier-stokes` baseline does);
2. the rest of the budget at medium fidelity: the vorticity at 8 points on the two
   shear layers at T_max / 6, T_max / 3, 2 T_max / 3 and T_max;
3. the strengths: the misfit of the early measurements (t <= T_max / 3, where it has
   one minimum) on a geometric grid of strengths, then least squares from the best
   grid point, first on the early measurements, then on all (Jacobian by forward-mode
   differentiation through the solver with the law's numbers as traced arguments,
   `fluid_solver.simulate_family`);
4. the fresh preparation is rolled out under the fitted law with the world's step
   choice on the world's grid and read at the query points.

Privileged: the runner hands it the episode (`solve_privileged`); it reads only the
law's name (`MadEpisode.world_info_for_calibration`) and maps it to a form with
`LAW_FORMS`; every number it uses comes from its own measurements and the prompt's
facts (`world_facts`, the revealed `preparation`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .classical import FIDELITY_SIGMA
from .fluid_quantum import (
    FIDELITY_COST,
    fit_shear_layer,
    oracle_view,
    preparation_hat,
)

VELOCITY_WAVENUMBER = 3.0  # paper: C = gamma sin(3 |u|^2)
VORTICITY_WAVENUMBER = math.pi / 16.0  # paper: C = gamma cos(pi omega / 16)
PAIR_FIDELITY = "high"  # the t = 0 pair: delta and A to ~1e-4
FIT_FIDELITY = "medium"
FIT_TIME_FRACTIONS = (1 / 6, 1 / 3, 2 / 3, 1.0)  # of T_max: when the fit's points are measured
EARLY_FRACTION = 1 / 3  # the grid scan and first fit use the measurements up to this
LAYER_POINTS_X = 4  # points per shear layer and time (x spread evenly, off the grid)
# The grid of strengths scanned per term (geometric, no paper value on it: the velocity
# term's are 0.5 and 0.7, the vorticity term's 5 and 10), and the bounds of the fit.
GRID = {"velocity": np.geomspace(0.05, 2.0, 17), "vorticity": np.geomspace(0.5, 20.0, 17)}
COMBINED_GRID_POINTS = 5  # per term, for a form with two terms
CANDIDATES = 3  # the best local minima of the grid misfit that are fitted further
GOOD_FIT = 5.0  # chi^2 per measurement below which a full fit is accepted (noise: ~1)
UPPER = {"velocity": 3.0, "vorticity": 30.0}
# With the wave numbers fitted too: their grids (geometric, each a factor of about 3 on
# either side of the paper's 3 and pi / 16, neither on the grid) and bounds; the
# strengths' grids are thinned so that the scan stays near 60 (one term) or 144 runs.
WAVENUMBER_GRID = {"velocity": np.geomspace(1.0, 9.0, 7), "vorticity": np.geomspace(0.05, 0.8, 7)}
WAVENUMBER_UPPER = {"velocity": 12.0, "vorticity": 1.2}
THINNED = {1: (9, 7), 2: (4, 3)}  # (strength, wave number) grid points per term


@dataclass(frozen=True)
class FluidLawForm:
    """What the oracle is told: the terms of C (no numbers)."""

    terms: tuple[str, ...]


LAW_FORMS = {
    "normal": FluidLawForm(()),
    "vel0.5": FluidLawForm(("velocity",)),
    "vel0.7": FluidLawForm(("velocity",)),
    "vort5": FluidLawForm(("vorticity",)),
    "vort10": FluidLawForm(("vorticity",)),
    "combined": FluidLawForm(("velocity", "vorticity")),
}


@dataclass(frozen=True)
class LawFamily:
    """params -> modulation C of a form: one strength per term, then (with
    `fit_wavenumbers`) one wave number per term; hashable, so `fluid_solver` compiles
    its kernel once per family."""

    terms: tuple[str, ...]
    fit_wavenumbers: bool = False

    def wavenumbers(self, params: Any) -> list[Any]:
        k = len(self.terms)
        if self.fit_wavenumbers:
            return [params[k + i] for i in range(k)]
        return [VELOCITY_WAVENUMBER if t == "velocity" else VORTICITY_WAVENUMBER
                for t in self.terms]

    def __call__(self, params: Any) -> Any:
        import jax.numpy as jnp

        betas = self.wavenumbers(params)

        def modulation(u: Any, v: Any, omega: Any) -> Any:
            c = 0.0
            for i, term in enumerate(self.terms):
                if term == "velocity":
                    c = c + params[i] * jnp.sin(betas[i] * (u * u + v * v))
                else:
                    c = c + params[i] * jnp.cos(betas[i] * omega)
            return c

        return modulation

    def transport_factor(self, params: Any) -> float:
        """The world's CFL factor for these numbers: 1 + sum |strength| beta (equal to
        the world's law's own factor when the numbers are the true ones)."""
        betas = self.wavenumbers(params)
        return 1.0 + sum(abs(float(params[i])) * abs(float(betas[i]))
                         for i in range(len(self.terms)))


def layer_points(n_x: int = LAYER_POINTS_X) -> np.ndarray:
    """Points on the two shear layers (y = pi/2 and 3 pi/2), n_x per layer."""
    x = (np.arange(n_x) + 0.5) * 2.0 * math.pi / n_x
    return np.array([[xi, y] for y in (0.5 * math.pi, 1.5 * math.pi) for xi in x])


def values_at(omega_hat: np.ndarray, points: np.ndarray) -> np.ndarray:
    from ....physics import fluid_solver as fs

    return fs.evaluate_at_points(omega_hat, points[:, 0], points[:, 1])


def grid_axes(family: LawFamily) -> list[np.ndarray]:
    """The values scanned before the fit, one axis per number (strengths first)."""
    terms = family.terms
    if family.fit_wavenumbers:
        n_strength, n_wave = THINNED[len(terms)]
        return ([np.geomspace(GRID[t][0], GRID[t][-1], n_strength) for t in terms]
                + [np.geomspace(WAVENUMBER_GRID[t][0], WAVENUMBER_GRID[t][-1], n_wave)
                   for t in terms])
    if len(terms) == 1:
        return [GRID[terms[0]]]
    return [np.geomspace(GRID[t][0], GRID[t][-1], COMBINED_GRID_POINTS) for t in terms]


def bounds(family: LawFamily) -> list[float]:
    """Upper bounds of the numbers (all are >= 0)."""
    return [UPPER[t] for t in family.terms] + (
        [WAVENUMBER_UPPER[t] for t in family.terms] if family.fit_wavenumbers else [])


def fit_law(family: LawFamily, omega_hat0: np.ndarray, times: np.ndarray,
            points: np.ndarray, measured: np.ndarray, sigma: float, nu: float,
            early: float) -> tuple[np.ndarray, float]:
    """Fit of the law's numbers to the measured vorticity (times x points) from the known
    initial state: grid scan and least squares on the times <= `early`, then least
    squares on all; returns (numbers, chi^2 per measurement)."""
    from scipy.optimize import least_squares

    from ....physics import fluid_solver as fs

    upper = bounds(family)

    def model(theta: np.ndarray, k: int, tangents: bool) -> tuple[np.ndarray, Any]:
        states, derivatives = fs.simulate_family(
            omega_hat0, times[:k], nu=nu, family=family, params=theta,
            factor=family.transport_factor(theta), with_tangents=tangents)
        residual = (np.concatenate([values_at(w, points) for w in states])
                    - measured[:k].ravel()) / sigma
        if not tangents:
            return residual, None
        jac = np.stack([np.concatenate([values_at(derivatives[t, j], points)
                                        for t in range(k)])
                        for j in range(len(theta))], axis=1) / sigma
        return residual, jac

    def fit(theta: np.ndarray, k: int, max_nfev: int) -> Any:
        memo: dict[bytes, tuple[np.ndarray, Any]] = {}

        def evaluate(th: np.ndarray) -> tuple[np.ndarray, Any]:
            key = np.asarray(th, dtype=float).tobytes()
            if key not in memo:
                memo[key] = model(th, k, True)
            return memo[key]

        return least_squares(lambda th: evaluate(th)[0], theta,
                             jac=lambda th: evaluate(th)[1],
                             bounds=(np.zeros(len(upper)), np.asarray(upper)),
                             method="trf", x_scale="jac", max_nfev=max_nfev)

    k_early = max(1, int(np.sum(times <= early + 1e-9)))
    axes = grid_axes(family)
    grid = np.array(np.meshgrid(*axes, indexing="ij")).reshape(len(axes), -1).T
    misfits = np.array([float(np.sum(model(g, k_early, False)[0] ** 2)) for g in grid])
    shape = tuple(len(a) for a in axes)
    early_fits = sorted((fit(np.asarray(grid[i], dtype=float), k_early, 20)
                         for i in local_minima(misfits, shape)[:CANDIDATES]),
                        key=lambda r: r.cost)
    best = None
    for candidate in early_fits:  # the best early fit first; the next only if it fails
        result = fit(candidate.x, len(times), 12)
        if best is None or result.cost < best.cost:
            best = result
        if 2.0 * best.cost / measured.size < GOOD_FIT:
            break
    return best.x, 2.0 * float(best.cost) / measured.size


def local_minima(misfits: np.ndarray, shape: tuple[int, ...]) -> list[int]:
    """Indices of the grid's local minima (neighbours along each axis), best first."""
    field = misfits.reshape(shape)
    out = []
    for index in np.ndindex(*shape):
        neighbours = []
        for axis in range(len(shape)):
            for step in (-1, 1):
                j = list(index)
                j[axis] += step
                if 0 <= j[axis] < shape[axis]:
                    neighbours.append(field[tuple(j)])
        if all(field[index] <= v for v in neighbours):
            out.append(int(np.ravel_multi_index(index, shape)))
    return sorted(out, key=lambda i: misfits[i])


class FluidLawOracle:
    """Told the law's form, fits its numbers to its own measurements (see module)."""

    privileged = True
    fit_wavenumbers = False  # law-oracle: the wave numbers belong to the form
    fitted: dict[str, float]

    def solve_privileged(self, episode: Any) -> None:
        view, ws = oracle_view(episode, "fluid")
        facts = ws["world_facts"]
        if facts.get("protocol") != "discovery":
            raise RuntimeError("the fluid law-oracle plays the discovery protocol only (under "
                               "--protocol paper the question is the measured world's own "
                               "future, which the navier-stokes baseline already plays)")
        law = episode.world_info_for_calibration().law
        form = LAW_FORMS.get(law)
        if form is None:
            raise RuntimeError(f"law-oracle knows no form for the law {law!r}")
        family = LawFamily(form.terms, self.fit_wavenumbers)
        params = self.fit(view, facts, family) if form.terms else np.zeros(0)
        self.fitted = dict(zip(self.names(family), map(float, params), strict=True))
        queries = self.end_measurements(view)
        prep = view.workspace()["preparation"]
        predictions = self.forecast(facts, prep, family, params,
                                    [float(q["t"]) for q in queries])
        result = view.call("predict", {"predictions": predictions.tolist()})
        if result.is_error:
            raise RuntimeError(result.text)

    @staticmethod
    def names(family: LawFamily) -> list[str]:
        return [f"{t}_strength" for t in family.terms] + (
            [f"{t}_wavenumber" for t in family.terms] if family.fit_wavenumbers else [])

    def fit(self, view: Any, facts: dict[str, Any], family: LawFamily) -> np.ndarray:
        from ....physics import fluid_solver as fs

        n = int(facts["resolution"])
        t_max = float(facts["t_max"])
        pair = self.measure(view, 0.0, [[0.0, 0.5 * math.pi], [math.pi, 0.5 * math.pi]],
                            PAIR_FIDELITY)
        thickness, amplitude = fit_shear_layer(float(pair[0]), float(pair[1]), n,
                                               tuple(facts["thickness_range"]))
        self.layer = (thickness, amplitude)
        points = layer_points()
        budget = float(view.workspace()["budget_remaining"])
        n_times = len(FIT_TIME_FRACTIONS)
        per_time = min(len(points), int(budget // (n_times * FIDELITY_COST[FIT_FIDELITY])))
        if per_time < 1:
            raise RuntimeError("the budget left buys no measurement for the fit")
        points = points[:per_time]
        times = np.array([t_max * f for f in FIT_TIME_FRACTIONS])
        measured = np.stack([self.measure(view, t, points.tolist(), FIT_FIDELITY)
                             for t in times])
        omega_hat0 = fs.initial_hat(fs.double_shear_layer(n, thickness, amplitude))
        params, self.chi2 = fit_law(family, omega_hat0, times, points, measured,
                                    FIDELITY_SIGMA[FIT_FIDELITY], float(facts["viscosity"]),
                                    EARLY_FRACTION * t_max)
        return params

    @staticmethod
    def forecast(facts: dict[str, Any], preparation: dict[str, float], family: LawFamily,
                 params: np.ndarray, times: list[float]) -> np.ndarray:
        """The preparation under the fitted law, read at the query points."""
        from ....physics import fluid_solver as fs
        from .fluid_quantum import standard_forecast

        if not family.terms:
            return standard_forecast(facts, preparation, times)
        points = np.asarray(facts["query_points"], dtype=float)
        states, _ = fs.simulate_family(preparation_hat(facts, preparation), times,
                                       nu=float(facts["viscosity"]), family=family,
                                       params=params, factor=family.transport_factor(params))
        return np.stack([values_at(w, points) for w in states])

    @staticmethod
    def measure(view: Any, t: float, what: Any, fidelity: str) -> np.ndarray:
        result = view.call("measure", {"t": float(t), "what": what, "fidelity": fidelity})
        if result.is_error:
            raise RuntimeError(result.text)
        return np.asarray(result.data["values"], dtype=float)

    @staticmethod
    def end_measurements(view: Any) -> list[dict[str, Any]]:
        if view.workspace()["phase"] == "measure":
            result = view.call("end_measurements", {})
            if result.is_error:
                raise RuntimeError(result.text)
        return list(view.workspace()["queries"])

    def solve(self, view: Any) -> None:  # pragma: no cover - privileged agents get the episode
        raise RuntimeError("law-oracle needs the episode itself (privileged agent)")


class FluidWavenumberOracle(FluidLawOracle):
    """`law-oracle-wavenumbers` (fluid only): told the terms of C, fits each term's
    strength and wave number (C = gamma sin(beta |u|^2), gamma cos(beta omega))."""

    fit_wavenumbers = True
