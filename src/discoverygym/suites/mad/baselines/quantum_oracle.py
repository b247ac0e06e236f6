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
2. the rest of the budget at low fidelity, each particle in turn: after a collapse a
   particle restarts from a known cell, so each is a Markov chain whose step is the
   one-particle propagator U(tau) read out under |.|^p. The cells are hidden behind the
   noise, so the chain is scored with the backward sum over cells (a hidden Markov
   model), with each step's own tau.
3. The steps are designed for information about p: before each measurement the oracle
   computes, for the cell it last found the particle in, the Fisher information of p
   that one low-fidelity report after a step tau would carry (Var of log|U(tau)[., c]|
   under |U|^p, blurred by the report noise), for every tau of a menu, and takes the
   best one its clock allows. The information is evaluated at a design p: 2 (the
   standard rule) in the first run (the pilot), then the fit of the runs so far.

Privileged: the runner hands it the episode (`solve_privileged`); it reads only the
law's name (`MadEpisode.world_info_for_calibration`) and maps it to a form with
`LAW_FORMS`; every number it uses comes from its own measurements and the prompt's
facts (`world_facts`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .classical import FIDELITY_SIGMA
from .fluid_quantum import FIDELITY_COST, oracle_view


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
# The design (ours): chain steps tau are chosen from this menu for the Fisher information
# of p one report carries (per start cell it varies by a factor 1.4-6 with tau: seeds 0,
# 1, 2, 4 at p = 3, the best tau <= 6 against a fixed tau = 2). A step may use at most
# TAU_CAP_FACTOR times the particle's clock left per step left (T_max bounds every run).
TAU_MENU = np.round(np.arange(0.2, 6.0 + 1e-9, 0.2), 10)
TAU_CAP_FACTOR = 1.5
PILOT_POWER = 2.0  # the design p of the first run (the standard rule)
DESIGN_POWER_RANGE = (0.7, 4.0)  # later runs: the fit so far, clipped to this range
DESIGN_SUBGRID = 4  # report points per cell and axis in the design's information sum
# coarse grids of the between-run fits that only steer the design
DESIGN_POWER_GRID = np.round(np.arange(0.4, 5.0 + 1e-9, 0.2), 10)
DESIGN_COUPLING_GRID = COUPLING_GRID[::3]


@dataclass
class RunSamples:
    """One measurement run: the t = 0 pair and each particle's chain, as (t, reported
    point) in time order."""

    start: tuple[np.ndarray, np.ndarray]
    chains: tuple[list[tuple[float, np.ndarray]], list[tuple[float, np.ndarray]]]


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


def propagator_columns(system: Any, tau: float, cells: np.ndarray) -> np.ndarray:
    """|U(tau)[:, c]| for the given start cells c (n^2 x len(cells)): where a particle
    collapsed onto cell c is found after tau, as amplitudes."""
    rows = system.vectors[np.asarray(cells)].T  # V^T e_c
    phase = system.energies * float(tau)
    real = system.vectors @ (np.cos(phase)[:, None] * rows)
    imag = system.vectors @ (np.sin(phase)[:, None] * rows)
    return np.hypot(real, imag)


_COLUMNS: dict[tuple[bytes, float, bytes], np.ndarray] = {}  # the fits between runs reuse them
COLUMN_CACHE_SIZE = 256


def log_columns(system: Any, tau: float, cells: np.ndarray) -> np.ndarray:
    """log `propagator_columns` (-inf where the amplitude is 0), memoised."""
    key = (system.energies.tobytes(), float(tau), np.asarray(cells, dtype=np.int64).tobytes())
    if key not in _COLUMNS:
        if len(_COLUMNS) >= COLUMN_CACHE_SIZE:
            _COLUMNS.clear()
        with np.errstate(divide="ignore"):
            _COLUMNS[key] = np.log(propagator_columns(system, tau, cells))
    return _COLUMNS[key]


def chain_messages(system: Any, start_cells: list[np.ndarray],
                   chains: list[list[tuple[float, np.ndarray]]], grid: Any, sigma: float,
                   powers: np.ndarray) -> list[np.ndarray]:
    """log of the likelihood of each chain's reports given its starting cell (one of
    `start_cells`, the cells its t = 0 report allows), for each p: one array
    (len(powers), len(start cells)) per chain. Backward recursion of the hidden Markov
    model with transitions T_p(c, c') = |U(tau)[c', c]|^p / sum_c'' |U(tau)[c'', c]|^p,
    tau each step's own; a step only needs the columns of the cells the previous report
    allows."""
    from scipy.special import logsumexp

    out = []
    for starts, chain in zip(start_cells, chains, strict=True):
        kernels = [log_kernel(x, grid, sigma) for _, x in chain]
        keeps = [np.flatnonzero(np.isfinite(kernel)) for kernel in kernels]
        froms = [np.asarray(starts)] + keeps[:-1]
        times = [0.0] + [float(t) for t, _ in chain]
        logs = [log_columns(system, times[s + 1] - times[s], froms[s])
                for s in range(len(chain))]
        messages = np.zeros((len(powers), len(starts)))
        for i, p in enumerate(powers):
            beta = np.zeros(0)
            for s in reversed(range(len(chain))):
                log_t = p * logs[s]  # [c', c in froms[s]]
                log_t -= logsumexp(log_t, axis=0, keepdims=True)
                weighted = kernels[s][keeps[s]]
                if s < len(chain) - 1:
                    weighted = weighted + beta
                beta = logsumexp(log_t[keeps[s]] + weighted[:, None], axis=0)
            if chain:
                messages[i] = beta
        out.append(messages)
    return out


def report_axis_kernel(grid: Any, sigma: float, subgrid: int = DESIGN_SUBGRID) -> np.ndarray:
    """P(report in a bin | cell) per axis on a grid of report bins `subgrid` per cell
    (two cells beyond the domain): (bins, n)."""
    from scipy.special import ndtr

    h = grid.spacing
    edges = -0.5 * grid.size + np.arange(grid.n + 1) * h
    points = -0.5 * grid.size - 2 * h + (np.arange((grid.n + 4) * subgrid) + 0.5) * h / subgrid
    cdf = ndtr((points[:, None] - edges[None, :]) / sigma)
    return (cdf[:, :-1] - cdf[:, 1:]) / subgrid


def step_information(system: Any, cell: int, taus: np.ndarray, power: float, grid: Any,
                     sigma: float) -> np.ndarray:
    """Fisher information of p in one report (noise sigma) of a particle collapsed onto
    `cell` and found again after each tau, for outcome power `power`: sum over report
    bins of (dP/dp)^2 / P with P = K q K^T, q = |U|^p normalised and dq/dp = q (log|U| -
    E_q log|U|)."""
    rows = system.vectors[int(cell)]
    phase = np.outer(system.energies, np.asarray(taus, dtype=float))
    real = system.vectors @ (np.cos(phase) * rows[:, None])
    imag = system.vectors @ (np.sin(phase) * rows[:, None])
    with np.errstate(divide="ignore"):
        log_w = np.log(np.hypot(real, imag)).T  # (taus, n^2)
    log_w = np.maximum(log_w, -700.0)
    q = np.exp(power * (log_w - log_w.max(axis=1, keepdims=True)))
    q /= q.sum(axis=1, keepdims=True)
    score = log_w - (q * log_w).sum(axis=1, keepdims=True)
    n = grid.n
    kernel = report_axis_kernel(grid, sigma)
    density = kernel @ q.reshape(-1, n, n) @ kernel.T
    slope = kernel @ (q * score).reshape(-1, n, n) @ kernel.T
    keep = density > 1e-300
    ratio = np.where(keep, slope**2 / np.where(keep, density, 1.0), 0.0)
    return ratio.sum(axis=(1, 2))


def next_time(system: Any, t: float, point: np.ndarray, left: int, t_max: float,
              power: float, grid: Any, sigma: float) -> float:
    """When to measure a particle next, found at `point` at time t with `left` chain
    steps to go: the tau of TAU_MENU with the most information about p at the design
    power, at most TAU_CAP_FACTOR times its clock left per step left."""
    clock = t_max - t
    cap = min(clock, TAU_CAP_FACTOR * clock / max(left, 1))
    menu = TAU_MENU[TAU_MENU <= cap + 1e-9]
    if menu.size == 0:
        return t + max(cap, 0.0)
    info = step_information(system, grid.cell_of(*point), menu, power, grid, sigma)
    return t + float(menu[int(np.argmax(info))])


def axis_log_density(axis: np.ndarray, centres: tuple[float, float], widths: tuple[float, float],
                     coupling: float) -> np.ndarray:
    """One axis of log(|psi1| |psi2| exp(-lambda d^2)) at t = 0 (32 x 32, particle 1 on
    rows): the joint density factorises into an x part and a y part."""
    first = -((axis - centres[0]) ** 2) / (4.0 * widths[0] ** 2)
    second = -((axis - centres[1]) ** 2) / (4.0 * widths[1] ** 2)
    return first[:, None] + second[None, :] - coupling * (axis[:, None] - axis[None, :]) ** 2


def log_likelihood_surface(runs: list[RunSamples], facts: dict[str, Any],
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
    pair_kernels = [[log_kernel(run.start[k], grid, pair_sigma) for k in range(2)]
                    for run in runs]
    pair_cells = [[np.flatnonzero(np.isfinite(kernel)) for kernel in kernels]
                  for kernels in pair_kernels]
    # chain term per run and particle: log P(chain | start cell), for every p
    messages = [chain_messages(cached_eigensystem(float(state["masses"][k])),
                               [cells[k] for cells in pair_cells],
                               [run.chains[k] for run in runs], grid, chain_sigma, powers)
                for k in range(2)]
    starts = []  # per run and particle: (start cells, log weight per p and cell)
    for r in range(len(runs)):
        starts.append([(pair_cells[r][k],
                        pair_kernels[r][k][pair_cells[r][k]][None, :] + messages[k][r])
                       for k in range(2)])
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


def fit_law(runs: list[RunSamples], facts: dict[str, Any], form: QuantumLawForm,
            powers: np.ndarray = POWER_GRID, couplings: np.ndarray = COUPLING_GRID,
            refine: bool = True) -> tuple[float, float]:
    """Maximum-likelihood (p, lambda) on the grids (lambda = 0 for an uncorrelated form);
    `refine` searches p again in steps of 0.02 around the best."""
    couplings = couplings if form.correlated else np.array([0.0])
    fidelity = PAIR_FIDELITY[form.correlated]
    coarse = log_likelihood_surface(runs, facts, couplings, powers, fidelity)
    i, j = np.unravel_index(int(np.argmax(coarse)), coarse.shape)
    if not refine:
        return float(powers[i]), float(couplings[j])
    fine_powers = powers[i] + POWER_REFINE
    fine_powers = fine_powers[fine_powers > 0]
    fine = log_likelihood_surface(runs, facts, couplings, fine_powers, fidelity)
    i, j = np.unravel_index(int(np.argmax(fine)), fine.shape)
    return float(fine_powers[i]), float(couplings[j])


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
        view, ws = oracle_view(episode, "quantum")
        facts = ws["world_facts"]
        if facts.get("initial_state") is None:
            raise RuntimeError("law-oracle needs the prepared state, which this episode hides "
                               "(initial_state=hidden)")
        law = episode.world_info_for_calibration().law
        form = LAW_FORMS.get(law)
        if form is None:
            raise RuntimeError(f"law-oracle knows no form for the law {law!r}")
        runs = self.measure(view, facts, form)
        queries = self.end_measurements(view)
        born_power, coupling = fit_law(runs, facts, form)
        result = view.call("predict", {"predictions": predict(facts, queries, born_power,
                                                              coupling).tolist()})
        if result.is_error:
            raise RuntimeError(result.text)

    def measure(self, view: Any, facts: dict[str, Any], form: QuantumLawForm
                ) -> list[RunSamples]:
        """Every run: the t = 0 pair, then each particle's chain with steps designed for
        information about p (see module); the design p is PILOT_POWER in the first run,
        then the fit of the runs so far."""
        from .. import quantum_solver as qs
        from ..quantum_world import cached_eigensystem

        pair_fidelity = PAIR_FIDELITY[form.correlated]
        budget = float(facts["budget_per_run"])
        t_max = float(facts["t_max"])
        pair_cost = 2 * FIDELITY_COST[pair_fidelity]
        steps = int((budget - pair_cost + 1e-9) // FIDELITY_COST[CHAIN_FIDELITY])
        if steps < 2:
            raise RuntimeError(f"a run's budget of {budget:g} buys no chain after the t = 0 pair")
        grid = qs.QuantumGrid(int(facts["grid"]), float(facts["domain"][1] - facts["domain"][0]))
        systems = [cached_eigensystem(float(m)) for m in facts["initial_state"]["masses"]]
        sigma = FIDELITY_SIGMA[CHAIN_FIDELITY]
        allotted = [steps - steps // 2, steps // 2]  # steps per particle and run
        runs: list[RunSamples] = []
        power = PILOT_POWER
        for run in range(int(facts["measurement_runs"])):
            if run > 0:
                self.call(view, "restart_measurements", {})
                power = float(np.clip(fit_law(runs, facts, form, DESIGN_POWER_GRID,
                                              DESIGN_COUPLING_GRID, refine=False)[0],
                                      *DESIGN_POWER_RANGE))
            start = tuple(self.measure_one(view, 0.0, k, pair_fidelity) for k in (1, 2))
            chains: tuple[list[tuple[float, np.ndarray]], ...] = ([], [])
            planned = [next_time(systems[k], 0.0, start[k], allotted[k], t_max, power, grid,
                                 sigma) for k in (0, 1)]
            while len(chains[0]) + len(chains[1]) < steps:
                k = min((k for k in (0, 1) if len(chains[k]) < allotted[k]),
                        key=lambda k: planned[k])
                t = min(planned[k], t_max)
                point = self.measure_one(view, t, k + 1, CHAIN_FIDELITY)
                chains[k].append((t, point))
                if len(chains[k]) < allotted[k]:
                    planned[k] = next_time(systems[k], t, point, allotted[k] - len(chains[k]),
                                           t_max, power, grid, sigma)
            runs.append(RunSamples(start, chains))  # type: ignore[arg-type]
        return runs

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
