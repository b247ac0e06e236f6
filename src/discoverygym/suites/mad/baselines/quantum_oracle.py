"""The quantum world's law-aware oracle (served as `law-oracle`): a privileged calibration
agent that is told the FORM of the hidden law, none of its numbers. Every quantum law
has the form "outcome density proportional to |Psi|^p" with p unknown; the oracle is
also told whether the prepared state carries a correlation factor exp(-lambda |r1 -
r2|^2) (lambda > 0 unknown) or is the product of the stated packets.

It buys its own measurements under the episode's budget, fits (p, lambda) by maximum
likelihood of exactly what it measured, and predicts with the fitted law from the
packets the prompt states (so it needs `initial_state=given`). The plan, per
measurement run:

1. at t = 0, particle 1 then particle 2 (medium fidelity for a correlated form): one sample of the joint
   initial density |psi1|^p |psi2|^p exp(-p lambda |r1 - r2|^2), the only place lambda
   shows (after both collapses the state is a product of two cells);
2. the rest of the budget at low fidelity, both particles at t = tau, 2 tau, ...: each
   particle restarts from a known cell, so each is a Markov chain whose step is the
   one-particle propagator U(tau) read out under |.|^p. The cells are hidden behind the
   noise, so the chain is scored with the forward-backward sum over cells (a hidden
   Markov model).

Privileged: the runner hands it the episode (`solve_privileged`); it reads only the
law's name (`MadEpisode.world_info_for_calibration`) and maps it to a form with
`LAW_FORMS`; every number it uses comes from its own measurements and the prompt's
facts (`world_facts`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .classical import FIDELITY_SIGMA
from .fluid_quantum import FIDELITY_COST, require_world


@dataclass(frozen=True)
class QuantumLawForm:
    """What the oracle is told: whether the initial state is correlated. That the
    outcome rule is |Psi|^p with some p holds for every law and is part of the form."""

    correlated: bool


LAW_FORMS = {
    "normal": QuantumLawForm(False),
    "p1": QuantumLawForm(False),
    "p3": QuantumLawForm(False),
    "lambda5": QuantumLawForm(True),
    "lambda15": QuantumLawForm(True),
    "combined": QuantumLawForm(True),
}

# The likelihood is maximised on grids: in p a coarse one, then a fine one around its
# best (forecast errors grow linearly with the error in p), in lambda a geometric one
# (forecast errors grow with its log).
POWER_GRID = np.round(np.arange(0.4, 5.0 + 1e-9, 0.1), 10)
POWER_REFINE = np.round(np.arange(-0.1, 0.1 + 1e-9, 0.02), 10)
COUPLING_GRID = np.geomspace(0.2, 100.0, 31)
# Fidelity of the t = 0 pair: medium pins its cells where lambda must be read from them
# (the correlation is about a cell wide); otherwise low, which leaves more for the chain.
PAIR_FIDELITY = {True: "medium", False: "low"}
CHAIN_FIDELITY = "low"  # the most samples; the HMM sums over the blurred cells
KERNEL_FLOOR = 1e-12  # cells less likely than this (relative) for a report are dropped
CHAIN_STEP = 2.0  # tau: time between chain samples (shorter when T_max is short)


@dataclass
class RunSamples:
    """One measurement run: the t = 0 pair and each particle's chain (reported points)."""

    start: tuple[np.ndarray, np.ndarray]
    chains: tuple[list[np.ndarray], list[np.ndarray]]


def cell_likelihood(point: np.ndarray, grid: Any, sigma: float) -> np.ndarray:
    """Density of a reported point given each cell (length n^2): the world reports a
    uniform point of the cell plus Gaussian noise of `sigma` per axis."""
    from scipy.special import ndtr

    h = grid.spacing
    edges = -0.5 * grid.size + np.arange(grid.n + 1) * h

    def axis(x: float) -> np.ndarray:
        return (ndtr((x - edges[:-1]) / sigma) - ndtr((x - edges[1:]) / sigma)) / h

    return np.outer(axis(float(point[0])), axis(float(point[1]))).ravel()


def log_kernel(point: np.ndarray, grid: Any, sigma: float) -> np.ndarray:
    """log of `cell_likelihood`, -inf below KERNEL_FLOOR times its largest value (so the
    sums run over the few cells near the report)."""
    kernel = cell_likelihood(point, grid, sigma)
    out = np.full(kernel.shape, -np.inf)
    keep = kernel > KERNEL_FLOOR * kernel.max()
    out[keep] = np.log(kernel[keep])
    return out


def log_transition_magnitudes(system: Any, tau: float) -> np.ndarray:
    """log |U(tau)[c', c]| of one particle's propagator (rows c' = where it is found,
    columns c = the cell it started in)."""
    propagator = system.vectors @ (np.exp(-1j * system.energies * tau)[:, None]
                                   * system.vectors.T)
    with np.errstate(divide="ignore"):
        return np.log(np.abs(propagator))


def chain_messages(log_u: np.ndarray, chains: list[list[np.ndarray]], grid: Any, sigma: float,
                   powers: np.ndarray) -> list[np.ndarray]:
    """log of the likelihood of each chain's reports given its starting cell, for each
    p: one array (len(powers), n^2) per chain. Backward recursion of the hidden Markov
    model with transitions T_p(c, c') = |U[c', c]|^p / sum_c'' |U[c'', c]|^p."""
    from scipy.special import logsumexp

    log_kernels = [[log_kernel(x, grid, sigma) for x in chain] for chain in chains]
    out = [np.empty((len(powers), log_u.shape[1])) for _ in chains]
    for i, p in enumerate(powers):
        log_t = p * log_u  # [c', c]
        log_t -= logsumexp(log_t, axis=0, keepdims=True)
        for chain, messages in zip(log_kernels, out, strict=True):
            beta = np.zeros(log_u.shape[0])  # after the last report
            for kernel in reversed(chain):
                weighted = kernel + beta  # over c' (where it was found)
                keep = np.isfinite(weighted)
                beta = logsumexp(log_t[keep] + weighted[keep, None], axis=0)  # over c
            messages[i] = beta
    return out


def axis_log_density(axis: np.ndarray, centres: tuple[float, float], widths: tuple[float, float],
                     coupling: float) -> np.ndarray:
    """One axis of log(|psi1| |psi2| exp(-lambda d^2)) at t = 0 (32 x 32, particle 1 on
    rows): the joint density factorises into an x part and a y part."""
    first = -((axis - centres[0]) ** 2) / (4.0 * widths[0] ** 2)
    second = -((axis - centres[1]) ** 2) / (4.0 * widths[1] ** 2)
    return first[:, None] + second[None, :] - coupling * (axis[:, None] - axis[None, :]) ** 2


def log_likelihood_surface(runs: list[RunSamples], facts: dict[str, Any], tau: float,
                           couplings: np.ndarray, powers: np.ndarray, pair_fidelity: str
                           ) -> np.ndarray:
    """log L(p, lambda) of every run's reports (len(powers) x len(couplings))."""
    from scipy.special import logsumexp

    from .. import quantum_solver as qs
    from ..quantum_world import cached_eigensystem  # public H, no truth

    state = facts["initial_state"]
    grid = qs.QuantumGrid(int(facts["grid"]), float(facts["domain"][1] - facts["domain"][0]))
    n = grid.n
    axis = grid.axis()
    pair_sigma, chain_sigma = FIDELITY_SIGMA[pair_fidelity], FIDELITY_SIGMA[CHAIN_FIDELITY]
    # chain term per run and particle: log P(chain | start cell), for every p
    logs_u = [log_transition_magnitudes(cached_eigensystem(float(m)), tau)
              for m in state["masses"]]
    messages = [chain_messages(logs_u[k], [run.chains[k] for run in runs], grid, chain_sigma,
                               powers) for k in range(2)]
    starts = []  # per run and particle: (start cells, log weight per p and cell)
    for r, run in enumerate(runs):
        pair = []
        for k in range(2):
            kernel = log_kernel(run.start[k], grid, pair_sigma)
            cells = np.flatnonzero(np.isfinite(kernel))
            pair.append((cells, kernel[cells][None, :] + messages[k][r][:, cells]))
        starts.append(pair)
    centres_x = (state["centres"][0][0], state["centres"][1][0])
    centres_y = (state["centres"][0][1], state["centres"][1][1])
    widths = (float(state["widths"][0]), float(state["widths"][1]))
    surface = np.empty((len(powers), len(couplings)))
    for j, coupling in enumerate(couplings):
        ex = axis_log_density(axis, centres_x, widths, coupling)
        ey = axis_log_density(axis, centres_y, widths, coupling)
        for i, p in enumerate(powers):
            log_z = logsumexp(p * ex) + logsumexp(p * ey)
            total = 0.0
            for (cells1, w1), (cells2, w2) in starts:
                i1, j1 = np.divmod(cells1, n)
                i2, j2 = np.divmod(cells2, n)
                joint = p * (ex[i1[:, None], i2[None, :]] + ey[j1[:, None], j2[None, :]])
                total += logsumexp(joint + w1[i][:, None] + w2[i][None, :]) - log_z
            surface[i, j] = total
    return surface


def fit_law(runs: list[RunSamples], facts: dict[str, Any], form: QuantumLawForm, tau: float
            ) -> tuple[float, float]:
    """Maximum-likelihood (p, lambda) on the grids (lambda = 0 for an uncorrelated form)."""
    couplings = COUPLING_GRID if form.correlated else np.array([0.0])
    fidelity = PAIR_FIDELITY[form.correlated]
    coarse = log_likelihood_surface(runs, facts, tau, couplings, POWER_GRID, fidelity)
    i, j = np.unravel_index(int(np.argmax(coarse)), coarse.shape)
    powers = POWER_GRID[i] + POWER_REFINE
    powers = powers[powers > 0]
    fine = log_likelihood_surface(runs, facts, tau, couplings, powers, fidelity)
    i, j = np.unravel_index(int(np.argmax(fine)), fine.shape)
    return float(powers[i]), float(couplings[j])


def predict(facts: dict[str, Any], queries: list[dict[str, Any]], born_power: float,
            coupling: float) -> np.ndarray:
    """Region probabilities at the queries under the fitted law, from the stated packets."""
    from .. import quantum_solver as qs
    from ..quantum_world import cached_eigensystem

    state = facts["initial_state"]
    grid = qs.QuantumGrid(int(facts["grid"]), float(facts["domain"][1] - facts["domain"][0]))
    systems = tuple(cached_eigensystem(float(m)) for m in state["masses"])
    packets = tuple(qs.gaussian_packet(grid, state["centres"][k], float(state["widths"][k]),
                                       state["momenta"][k]) for k in range(2))
    if coupling == 0.0:
        return qs.product_forecast(systems, packets, born_power, grid, queries)
    return qs.joint_forecast(systems, qs.entangled_state(*packets, grid, coupling),
                             born_power, grid, queries)


class QuantumLawOracle:
    """Told the law's form, fits p (and lambda) to its own measurements (see module)."""

    privileged = True

    def solve_privileged(self, episode: Any) -> None:
        view = episode.view()
        require_world(view, "quantum")
        ws = view.workspace()
        if "parameter" in ws or ws["n_trials"] > 1:
            raise RuntimeError("law-oracle calibrates the predict variant only (one trial)")
        facts = ws["world_facts"]
        if facts.get("initial_state") is None:
            raise RuntimeError("law-oracle needs the prepared state, which this episode hides "
                               "(initial_state=hidden)")
        law = episode.world_info_for_calibration().law
        form = LAW_FORMS.get(law)
        if form is None:
            raise RuntimeError(f"law-oracle knows no form for the law {law!r}")
        runs, tau = self.measure(view, facts, PAIR_FIDELITY[form.correlated])
        queries = self.end_measurements(view)
        born_power, coupling = fit_law(runs, facts, form, tau)
        result = view.call("predict", {"predictions": predict(facts, queries, born_power,
                                                              coupling).tolist()})
        if result.is_error:
            raise RuntimeError(result.text)

    def measure(self, view: Any, facts: dict[str, Any], pair_fidelity: str
                ) -> tuple[list[RunSamples], float]:
        """Every run: the t = 0 pair, then both particles at tau, 2 tau, ... (see module)."""
        budget = float(facts["budget_per_run"])
        pair_cost = 2 * FIDELITY_COST[pair_fidelity]
        steps = int((budget - pair_cost + 1e-9) // (2 * FIDELITY_COST[CHAIN_FIDELITY]))
        if steps < 1:
            raise RuntimeError(f"a run's budget of {budget:g} buys no chain after the t = 0 pair")
        tau = min(CHAIN_STEP, float(facts["t_max"]) / steps)
        runs = []
        for run in range(int(facts["measurement_runs"])):
            if run > 0:
                self.call(view, "restart_measurements", {})
            start = tuple(self.measure_one(view, 0.0, k, pair_fidelity) for k in (1, 2))
            chains: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
            for s in range(1, steps + 1):
                for k in (1, 2):
                    chains[k - 1].append(self.measure_one(view, s * tau, k, CHAIN_FIDELITY))
            runs.append(RunSamples(start, chains))  # type: ignore[arg-type]
        return runs, tau

    def measure_one(self, view: Any, t: float, particle: int, fidelity: str) -> np.ndarray:
        result = self.call(view, "measure", {"t": float(t), "what": particle,
                                             "fidelity": fidelity})
        return np.asarray(result.data["values"], dtype=float)

    def end_measurements(self, view: Any) -> list[dict[str, Any]]:
        if view.workspace()["phase"] == "measure":
            self.call(view, "end_measurements", {})
        return list(view.workspace()["queries"])

    @staticmethod
    def call(view: Any, name: str, args: dict[str, Any]) -> Any:
        result = view.call(name, args)
        if result.is_error:
            raise RuntimeError(result.text)
        return result

    def solve(self, view: Any) -> None:  # pragma: no cover - privileged agents get the episode
        raise RuntimeError("law-oracle needs the episode itself (privileged agent)")
