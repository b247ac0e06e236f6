"""Calibration of the mad suite's quantum world (issue 16): under the default (discovery)
protocol an altered law is scored against the normal-physics forecast and the normal law
against the nearest altered law's, so standard quantum mechanics scores no skill on an
altered law while the law-aware oracle, told only the law's form, fits p and lambda from
its own measurements and passes; `--protocol paper` keeps the uniform reference."""

from __future__ import annotations

import numpy as np
import pytest

from discoverygym.core import get_suite, make_agent
from discoverygym.run.episode_worker import play_scripted
from discoverygym.suites.mad import quantum_solver as qs
from discoverygym.suites.mad import quantum_world as qw
from discoverygym.suites.mad.baselines import quantum_oracle as qo
from discoverygym.suites.mad.worlds import Observation
from testpaths import REPO

SHORT = {"t_max": 3.0, "query_horizon": 2.0}  # the same physics, nearer query times


def play(law: str, agent: str, seed: int, **options) -> dict:
    spec = {"suite": "mad", "task_id": f"quantum-{law}", "seed": seed,
            "options": {**SHORT, **options}}
    record = play_scripted(spec, agent)
    assert record["error"] is None, record["error"]
    return record


def test_product_states_evolve_alike_on_both_paths():
    # Second method: a product state's marginal from one-particle evolutions equals the
    # joint evolution's, for every outcome power; a collapsed state likewise.
    world = qw.QuantumWorld(seed=4, law="normal")
    p = world.packets
    psi1 = qs.gaussian_packet(world.grid, p.means[0], p.widths[0], p.momenta[0])
    psi2 = qs.gaussian_packet(world.grid, p.means[1], p.widths[1], p.momenta[1])
    systems = (qw.cached_eigensystem(p.masses[0]), qw.cached_eigensystem(p.masses[1]))
    queries = world.queries()
    for power in (1.0, 2.0, 3.0):
        product = qs.product_forecast(systems, (psi1, psi2), power, world.grid, queries)
        joint = qs.joint_forecast(systems, np.outer(psi1, psi2), power, world.grid, queries)
        assert np.max(np.abs(product - joint)) < 1e-12
    entangled = qw.QuantumWorld(seed=4, law="lambda5").undisturbed_state(2.0)
    for particle in (1, 2):
        cell = int(np.argmax(qs.marginal(entangled, particle)))
        factors = qs.ProductPropagator(*systems, *qs.collapse_to_product(entangled, particle,
                                                                            cell), 2.0)
        matrix = qs.Propagator.from_state(*systems, qs.collapse(entangled, particle, cell), 2.0)
        assert np.max(np.abs(factors.state(5.0) - matrix.state(5.0))) < 1e-12


def test_schrodinger_and_uniform_have_no_skill_on_an_altered_law():
    # The reference is the better of the two law-free forecasts: normal physics (what
    # schrodinger answers, by its own code) and uniform (what the uniform agent answers).
    for law in ("p3", "lambda15"):
        for agent in ("schrodinger", "uniform"):
            record = play(law, agent, 0)
            assert record["options"]["protocol"] == "discovery"
            assert record["details"]["reference"].startswith("normal physics")
            assert record["details"]["skill"] < 1e-9 and not record["passed"]
            assert record["value"] > 0.005  # the law did change the outcome
        world = qw.QuantumWorld(seed=0, law=law, **SHORT)
        truth = world.truth_at_queries()
        best = min(world.error(world.law_forecast(2.0, 0.0), truth),
                   world.error(np.array([qw.uniform_probability(q["region"])
                                         for q in world.queries()]), truth))
        assert world.error(world.reference_prediction(), truth) == best


def test_normal_law_is_scored_against_the_nearest_altered_law():
    world = get_suite("mad").episode("quantum-normal", seed=1, **SHORT)._world
    truth = world.truth_at_queries()
    # the altered worlds' own truths (joint evolution) are the altered laws' forecasts
    errors = [world.error(qw.QuantumWorld(seed=1, law=law, **SHORT).truth_at_queries(), truth)
              for law in qw.LAWS if law != "normal"]
    reference = world.error(world.reference_prediction(), truth)
    assert reference == pytest.approx(min(errors), rel=1e-9)
    assert play("normal", "schrodinger", 1)["passed"]


def test_paper_protocol_keeps_the_uniform_reference():
    paper = play("p3", "schrodinger", 2, protocol="paper")
    discovery = play("p3", "schrodinger", 2)
    truth = np.asarray(paper["truth"])
    world = qw.QuantumWorld(seed=2, law="p3", **SHORT)
    uniform = [qw.uniform_probability(q["region"]) for q in world.queries()]
    assert paper["details"]["reference"].startswith("uniform")
    assert paper["details"]["reference_error"] == pytest.approx(
        np.linalg.norm(np.array(uniform) - truth), rel=1e-12)
    assert paper["answer"] == discovery["answer"] and paper["value"] == discovery["value"]
    assert paper["passed"] == (paper["details"]["skill"] >= 0.5)
    with pytest.raises(ValueError, match="protocol"):
        qw.QuantumWorld(seed=0, law="normal", protocol="loose")


@pytest.mark.parametrize("law,seed", [("p1", 0), ("lambda5", 1), ("normal", 0)])
def test_law_oracle_passes_on_a_short_world(law, seed):
    oracle = play(law, "law-oracle", seed)
    assert oracle["details"]["privileged_agent"] is True
    assert oracle["passed"], oracle["details"]["skill"]
    assert oracle["usage"]["observations"] >= 60  # it measured; nothing came for free
    if law != "normal":
        assert oracle["value"] < 0.5 * play(law, "schrodinger", seed)["value"]


def simulated_runs(world: qw.QuantumWorld, pair_fidelity: str, n_runs: int,
                   rng: np.random.Generator, steps: int = 5) -> list[qo.RunSamples]:
    """A fixed plan (the pair at t = 0, then both particles every 2 units) played on the
    world directly (its own sampling and collapse), with the protocol's noise, for more
    runs than an episode allows."""
    sigma = {"low": 0.1, "medium": 0.01}

    def measure(t: float, particle: int, fidelity: str) -> np.ndarray:
        values = world.true_values(t, Observation(particle, 1, ""), rng)
        return values + sigma[fidelity] * rng.standard_normal(2)

    runs = []
    for run in range(n_runs):
        world.start_trial(run)
        start = (measure(0.0, 1, pair_fidelity), measure(0.0, 2, pair_fidelity))
        chains: tuple[list, list] = ([], [])
        for step in range(1, steps + 1):
            for particle in (1, 2):
                chains[particle - 1].append((2.0 * step, measure(2.0 * step, particle, "low")))
        runs.append(qo.RunSamples(start, chains))
    return runs


def test_oracle_likelihood_recovers_the_law_from_many_runs():
    # Consistency against the world's own sampling and collapse: with 40 runs (8 times
    # the episode's) the maximum-likelihood p and lambda land near the truth.
    rng = np.random.default_rng(11)
    for law in ("p3", "lambda15"):
        world = qw.QuantumWorld(seed=0, law=law)
        form = qo.LAW_FORMS[law]
        runs = simulated_runs(world, qo.PAIR_FIDELITY[form.correlated], 40, rng)
        power, coupling = qo.fit_law(runs, world.public_facts(), form)
        assert abs(power - world.born_power) < 0.25, law
        if form.correlated:
            assert abs(np.log(coupling / world.coupling)) < np.log(1.5)


def test_chain_likelihood_with_its_own_steps_matches_the_full_transition_matrix():
    # Second method: the backward recursion over full |U(tau)|^p matrices (one tau per
    # step, every start cell) gives the same log-likelihood as the oracle's, which only
    # evaluates the columns of the cells each previous report allows.
    from scipy.special import logsumexp

    world = qw.QuantumWorld(seed=2, law="p3")
    grid = world.grid
    system = qw.cached_eigensystem(world.packets.masses[0])
    start = np.array([0.4, -1.1])
    chain = [(0.6, np.array([0.5, -0.9])), (2.0, np.array([1.3, 0.2])),
             (2.0, np.array([1.25, 0.3])), (4.4, np.array([-0.7, 0.8]))]
    cells = np.flatnonzero(np.isfinite(qo.log_kernel(start, grid, 0.1)))
    powers = np.array([1.0, 2.0, 3.3])
    ours = qo.chain_messages(system, [cells], [chain], grid, 0.1, powers)[0]
    times = [0.0] + [t for t, _ in chain]
    for i, p in enumerate(powers):
        beta = np.zeros(grid.n**2)
        for s in reversed(range(len(chain))):
            tau = times[s + 1] - times[s]
            u = system.vectors @ (np.exp(-1j * system.energies * tau)[:, None]
                                  * system.vectors.T)
            with np.errstate(divide="ignore"):
                log_t = p * np.log(np.abs(u))
            log_t -= logsumexp(log_t, axis=0, keepdims=True)
            kernel = qo.log_kernel(chain[s][1], grid, 0.1)
            beta = logsumexp(log_t + (kernel + beta)[:, None], axis=0)
        assert np.allclose(ours[i], beta[cells], rtol=1e-9, atol=1e-9)


def test_step_information_is_the_variance_of_the_log_amplitude():
    # Second method: without noise the Fisher information of p in one sample of
    # q = |U|^p / sum |U|^p is Var_q(log|U|); the report noise can only lose some.
    world = qw.QuantumWorld(seed=0, law="normal")
    system = qw.cached_eigensystem(world.packets.masses[1])
    cell = world.grid.cell_of(0.3, -0.4)
    taus = np.array([0.4, 2.0, 4.8])
    for power in (1.0, 3.0):
        sharp = qo.step_information(system, cell, taus, power, world.grid, 1e-4)
        blurred = qo.step_information(system, cell, taus, power, world.grid, 0.1)
        for tau, info in zip(taus, sharp, strict=True):
            log_w = np.log(qo.propagator_columns(system, tau, np.array([cell]))[:, 0])
            q = np.exp(power * (log_w - log_w.max()))
            q /= q.sum()
            variance = np.sum(q * log_w**2) - np.sum(q * log_w) ** 2
            assert info == pytest.approx(variance, rel=1e-3)
        assert np.all(blurred < sharp) and np.all(blurred > 0.2 * sharp)


def test_oracle_plan_designs_its_steps_for_information():
    # The measurement plan on the default world (seed 0, p3): every run buys the pair at
    # t = 0 and 13 low-fidelity chain samples; each step is the menu's most informative
    # one for the cell last seen at the design power, within T_max; the steps differ.
    episode = get_suite("mad").episode("quantum-p3", seed=0)
    view = episode.view()
    facts = view.workspace()["world_facts"]
    oracle = qo.QuantumLawOracle()
    runs = oracle.measure(view, facts, qo.LAW_FORMS["p3"])
    assert len(runs) == 5
    steps = []
    for run in runs:
        assert [len(chain) for chain in run.chains] == [7, 6]
        for chain in run.chains:
            times = [0.0] + [t for t, _ in chain]
            assert all(0.0 <= a <= b <= 30.0 for a, b in zip(times, times[1:], strict=False))
            steps += list(np.diff(times))
    assert len({round(s, 6) for s in steps}) >= 5  # not one fixed step
    # the first chain step of the pilot run is the menu's best at p = 2
    system = qw.cached_eigensystem(facts["initial_state"]["masses"][0])
    first_t = runs[0].chains[0][0][0]
    expected = qo.next_time(system, 0.0, runs[0].start[0], 7, 30.0, qo.PILOT_POWER,
                            qs.QuantumGrid(), 0.1)
    assert first_t == pytest.approx(expected)
    assert (view.workspace()["budget_remaining"] or 0.0) < 2  # the whole budget went in
    power, _ = qo.fit_law(runs, facts, qo.LAW_FORMS["p3"])
    assert abs(power - 3.0) < 0.4


def test_nothing_of_the_law_reaches_the_agent():
    episode = get_suite("mad").episode("quantum-lambda15", seed=3, **SHORT)
    view = episode.view()
    seen = [episode.prompt, repr(view.workspace())]
    for t, particle in ((0.0, 1), (0.0, 2), (1.0, 1)):
        result = view.call("measure", {"t": t, "what": particle, "fidelity": "low"})
        seen += [result.text, repr(result.data)]
    result = view.call("end_measurements", {})
    seen += [result.text, repr(result.data), repr(view.workspace())]
    text = "\n".join(seen)
    for secret in ("lambda15", "15.0", "coupling", "born", "normal physics", "nearest"):
        assert secret not in text.lower(), secret


def test_law_oracle_refuses_what_it_cannot_calibrate():
    oracle = make_agent("mad", "law-oracle")
    hidden = get_suite("mad").episode("quantum-p1", seed=0, initial_state="hidden", **SHORT)
    with pytest.raises(RuntimeError, match="hides"):
        oracle.solve_privileged(hidden)
    fluid = get_suite("mad").episode("fluid-normal", seed=0, resolution=32, t_max=2.0,
                                     protocol="paper")
    with pytest.raises(RuntimeError, match="discovery protocol only"):
        oracle.solve_privileged(fluid)


def test_bench_script_writes_the_table_between_the_markers(tmp_path):
    import json
    import subprocess
    import sys

    root = REPO
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- mad-calibration:classical:begin -->\nold\n"
                      "<!-- mad-calibration:classical:end -->\nafter\n")
    out = subprocess.run(
        [sys.executable, str(root / "bench" / "mad_calibration.py"), "--seeds", "0",
         "--laws", "normal", "--agents", "last-seen", "--workers", "1", "--option", "t_max=5",
         "--readme", str(readme)], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin",
             "DISCOVERYGYM_CACHE": str(tmp_path)})
    entry = json.loads(out.stdout)["table"]["classical-normal"]["last-seen"]
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert f"| classical-normal | 0.00 / {entry['median_error']:.3g} | yes |" in text
    assert "`python bench/mad_calibration.py --seeds 0 " in text
