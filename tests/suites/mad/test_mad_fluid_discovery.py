"""The fluid world's `discovery` protocol (the default): after the measurements the agent
is given a fresh double shear layer and predicts its vorticity at the query points; the
truth is that preparation under the world's law, the reference normal physics from it
(the normal law: the nearest altered law). Checked here: the truth against an
independent integrator (fixed-step RK4 with complex FFTs and explicit viscosity); the
preparation is new, public and the same under every law; nothing hidden reaches the
agent; bad answers are refused free; the law-oracle fits the strengths and passes where
`navier-stokes` (skill exactly 0) and `persistence` fail; `--protocol paper` keeps the
published setup. A 32 x 32 grid and short windows keep it fast."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from discoverygym.core import get_suite, make_agent
from discoverygym.physics import fluid_solver as fs
from discoverygym.suites.mad import fluid_world as fw
from discoverygym.suites.mad import streams
from discoverygym.suites.mad.baselines import fluid_oracle as fo
from discoverygym.suites.mad.baselines import fluid_quantum as agents

TINY = {"resolution": 32, "t_max": 2.0, "query_horizon": 2.0}


def episode(law: str, seed: int = 0, **options):
    return get_suite("mad").episode(f"fluid-{law}", seed=seed, **{**TINY, **options})


def play(agent, ep):
    if getattr(agent, "privileged", False):
        agent.solve_privileged(ep)
    else:
        agent.solve(ep.view())
    return ep.record(agent="test")


def test_discovery_is_the_default_and_asks_about_a_fresh_preparation():
    world = fw.FluidWorld(seed=3, law="vort5")
    assert world.protocol == "discovery" and fw.FluidWorld.protocols == ("discovery", "paper")
    assert (world.resolution, world.defaults.t_max, world.query_horizon) == (
        fw.DISCOVERY_RESOLUTION, fw.DISCOVERY_T_MAX, fw.DISCOVERY_QUERY_HORIZON)
    assert all(0.0 < q["t"] <= world.query_horizon for q in world.queries())
    prep = world.answer_facts()["preparation"]
    rng = np.random.default_rng([3, streams.MAD_PREPARATION, 0])
    assert prep == {"thickness": rng.uniform(0.05, 0.2), "amplitude": rng.uniform(0.15, 0.5),
                    "phase": rng.uniform(0.0, 2.0 * math.pi)}
    # new: neither the measured layer nor the next trial's preparation
    assert prep["thickness"] != world.layer.thickness
    assert world.answer_facts(1) != world.answer_facts(0)
    # the same preparation and questions under every law
    for law in fw.LAWS:
        other = fw.FluidWorld(seed=3, law=law)
        assert other.answer_facts() == world.answer_facts()
        assert other.queries() == world.queries()
    paper = fw.FluidWorld(seed=3, law="vort5", protocol="paper")
    assert paper.answer_facts() == {} and paper.resolution == fw.DEFAULT_RESOLUTION
    assert all(q["t"] > fw.T_MAX for q in paper.queries())
    assert "protocol" not in paper.public_facts() and "protocol" not in paper.info().options


def independent_truth(world: fw.FluidWorld, law: str) -> np.ndarray:
    """The preparation under `law`, integrated by the naive reference scheme (fixed-step
    RK4, complex FFTs, explicit viscosity), read at the query points."""
    prep = world.preparation()
    omega0 = fs.double_shear_layer(world.resolution, prep.thickness, prep.amplitude, prep.phase)
    out = []
    for q in world.queries():
        grid = fs.reference_simulate(omega0, q["t"], nu=fw.VISCOSITY, dt=2e-3,
                                     modulation=fw.LAWS[law])
        out.append(fs.evaluate_at_points(fs.initial_hat(grid), world.query_points[:, 0],
                                         world.query_points[:, 1]))
    return np.stack(out)


def test_truth_and_reference_equal_an_independent_integration():
    world = fw.FluidWorld(seed=1, law="vel0.7", resolution=32, query_horizon=1.0)
    truth = world.truth_at_queries()
    independent = independent_truth(world, "vel0.7")
    scale = np.max(np.abs(independent))
    # time-step error of the adaptive Lawson scheme at CFL 0.5 (2e-4 measured on 32^2)
    assert np.max(np.abs(truth - independent)) < 2e-3 * scale
    # an altered law is scored against normal physics from the preparation ...
    normal = independent_truth(world, "normal")
    assert np.max(np.abs(world.reference_prediction() - normal)) < 2e-3 * scale
    assert fw.relative_l2(normal, truth) > 0.1  # ... which the law changes
    # ... and the normal law against the nearest altered law's forecast
    normal_world = fw.FluidWorld(seed=1, law="normal", resolution=32, query_horizon=1.0)
    forecasts = {law: fw.FluidWorld(seed=1, law=law, resolution=32,
                                    query_horizon=1.0).truth_at_queries()
                 for law in fw.LAWS if law != "normal"}
    errors = {law: fw.relative_l2(f, normal_world.truth_at_queries())
              for law, f in forecasts.items()}
    nearest = min(errors, key=errors.get)
    assert np.array_equal(normal_world.reference_prediction(), forecasts[nearest])
    assert "nearest altered law" in normal_world.reference_prose


def test_law_family_reproduces_the_world_law_and_its_derivative():
    """The oracle's parametrised kernel with the true numbers is the world's integrator,
    and its forward-mode derivative matches a finite difference."""
    omega_hat = fs.initial_hat(fs.double_shear_layer(32, 0.12, 0.3, 1.0))
    family = fo.LawFamily(("velocity", "vorticity"))
    params = [0.25, 2.5]  # the combined law: 0.5 * 0.5 and 0.5 * 5
    world_law = fs.simulate(fs.double_shear_layer(32, 0.12, 0.3, 1.0), [0.5, 1.0],
                            nu=fw.VISCOSITY, modulation=fw.LAWS["combined"]).omega_hat
    assert family.transport_factor(params) == pytest.approx(
        fs.transport_factor(fw.LAWS["combined"]))
    states, tangents = fs.simulate_family(omega_hat, [0.5, 1.0], nu=fw.VISCOSITY,
                                          family=family, params=params,
                                          factor=family.transport_factor(params),
                                          with_tangents=True)
    assert np.max(np.abs(states - world_law)) < 1e-9 * np.max(np.abs(world_law))
    eps = 1e-5
    factor = family.transport_factor(params)  # the same steps on both sides
    up, _ = fs.simulate_family(omega_hat, [1.0], nu=fw.VISCOSITY, family=family,
                               params=[0.25, 2.5 + eps], factor=factor)
    down, _ = fs.simulate_family(omega_hat, [1.0], nu=fw.VISCOSITY, family=family,
                                 params=[0.25, 2.5 - eps], factor=factor)
    finite = (up[0] - down[0]) / (2 * eps)
    assert np.max(np.abs(tangents[1, 1] - finite)) < 1e-5 * np.max(np.abs(finite))


@pytest.mark.parametrize("law,seed", [("vort10", 0), ("combined", 1)])
def test_law_oracle_fits_the_strengths_and_passes_where_normal_physics_fails(law, seed):
    oracle = fo.FluidLawOracle()
    record = play(oracle, episode(law, seed))
    truth = {"vort10": [10.0], "combined": [0.25, 2.5]}[law]
    assert np.allclose(list(oracle.fitted.values()), truth, rtol=0.02), oracle.fitted
    assert record.passed and record.details["skill"] > 0.9
    assert record.usage.cost <= fw.BUDGET
    ns = play(agents.FluidNavierStokes(), episode(law, seed))
    assert ns.details["skill"] == 0.0 and not ns.passed  # it is the reference
    persistence = play(agents.FluidPersistence(), episode(law, seed))
    assert not persistence.passed
    assert ns.usage.cost == 0 and persistence.usage.cost == 0


def test_normal_law_oracle_and_navier_stokes_are_exact_and_persistence_fails():
    for agent in (make_agent("mad", "law-oracle"), agents.FluidNavierStokes()):
        record = play(agent, episode("normal", 2))
        assert record.value == 0.0 and record.passed
        assert record.details["reference"].startswith("nearest altered law")
    persistence = play(agents.FluidPersistence(), episode("normal", 2))
    assert not persistence.passed
    # persistence answers the preparation's initial vorticity at the query points
    world = fw.FluidWorld(seed=2, law="normal", **TINY)
    prep = world.preparation()
    initial = fs.evaluate_at_points(
        fs.initial_hat(fs.double_shear_layer(32, prep.thickness, prep.amplitude, prep.phase)),
        world.query_points[:, 0], world.query_points[:, 1])
    assert np.allclose(persistence.answer["predictions"], [initial.tolist()] * 5)


def test_nothing_hidden_reaches_the_agent():
    ep = episode("vort10", seed=4)
    view = ep.view()
    seen = [view.prompt, repr(view.workspace())]
    for t, what, fidelity in ((0.0, [[0.0, 1.5707963]], "high"), (1.0, [[1.0, 1.0]], "low")):
        result = view.call("measure", {"t": t, "what": what, "fidelity": fidelity})
        seen += [result.text, repr(result.data)]
    result = view.call("end_measurements", {})
    seen += [result.text, repr(result.data), repr(view.workspace())]
    text = "\n".join(seen)
    world = ep._world
    assert "preparation" in text and "thickness" in text  # the public preparation
    assert "Question: after the measurements you are given a fresh double shear layer" \
        in view.prompt
    layer = fw.sample_shear_layer(4)
    truth = world.truth_at_queries()
    secrets = [f"{layer.thickness:.5f}", f"{layer.amplitude:.5f}", "vort10", "gamma", "modulation",
               "normal physics", "nearest", *(f"{v:.6f}" for v in truth.ravel()[:8]),
               *(f"{v:.6f}" for v in world.reference_prediction().ravel()[:8])]
    for secret in secrets:
        assert secret not in text, secret


def test_bad_answers_are_refused_free_and_the_episode_goes_on():
    ep = episode("vel0.5", seed=0)
    view = ep.view()
    early = view.call("predict", {"predictions": [[0.0] * 16] * 5})
    assert early.is_error and not ep.done
    view.call("measure", {"t": 1.0, "what": [[1.0, 1.0]], "fidelity": "low"})
    budget = view.workspace()["budget_remaining"]
    view.call("end_measurements", {})
    for bad in ([[0.0] * 15] * 5, [[0.0] * 16] * 4, [[float("nan")] * 16] * 5,
                [["a"] * 16] * 5, "none"):
        result = view.call("predict", {"predictions": bad})
        assert result.is_error and not ep.done, bad
        assert view.workspace()["budget_remaining"] == budget
    ok = view.call("predict", {"predictions": [[0.0] * 16] * 5})
    assert not ok.is_error and ep.done
    assert ep.record(agent="test").value == pytest.approx(1.0)  # zero: relative L2 of 1


def test_paper_protocol_keeps_its_setup_and_the_oracle_refuses_it():
    ep = episode("normal", 0, protocol="paper")
    assert "preparation" not in ep.view().prompt.split("Query points")[0]
    record = play(agents.FluidPersistence(), ep)
    assert record.details["reference"] == "persistence: the true state at T_max held fixed"
    assert "preparation" not in record.details
    assert all(q["t"] > TINY["t_max"] for q in record.details["queries"])
    assert json.dumps(record.details["world_options"]) == json.dumps(
        {"resolution": 32, "t_max": 2.0, "query_horizon": 2.0})
    with pytest.raises(RuntimeError, match="discovery protocol only"):
        make_agent("mad", "law-oracle").solve_privileged(episode("vort5", 0, protocol="paper"))


def test_wavenumber_oracle_fits_strength_and_wave_number():
    """`law-oracle-wavenumbers` is told only that C = gamma sin(beta |u|^2) and finds
    both numbers."""
    oracle = make_agent("mad", "law-oracle-wavenumbers")
    record = play(oracle, episode("vel0.7", 0))
    assert np.allclose([oracle.fitted["velocity_strength"], oracle.fitted["velocity_wavenumber"]],
                       [0.7, 3.0], rtol=0.02), oracle.fitted
    assert record.passed


def test_discoverygym_calibrate_calls_fluid_tasks_valid(tmp_path):
    """`discoverygym calibrate mad --world fluid`: with the fluid law-oracle the tasks
    are valid (they were `too hard` while the world had no oracle)."""
    from discoverygym.calibrate import VALID, calibrate

    result = calibrate("mad", seeds=[0], tasks="fluid-normal,fluid-vort5",
                       raw_options={"world": "fluid", "resolution": "32", "t_max": "2",
                                    "query_horizon": "2"},
                       runs_dir=tmp_path, executor="serial", workers=1)
    assert {t.task_id: t.verdict for t in result.tasks} == {"fluid-normal": VALID,
                                                            "fluid-vort5": VALID}
    # the baselines of the other worlds do not play fluid episodes: left out ("–"),
    # never counted as a 0 they did not play for
    rates = {t.task_id: t.rates for t in result.tasks}
    assert set(rates["fluid-vort5"]) == {"law-oracle", "navier-stokes", "persistence"}
    row = next(line for line in result.to_markdown().splitlines()
               if line.startswith("| fluid-vort5"))
    assert row.count("–") == len(result.agents) - 3
    records = [json.loads(line) for line in
               (tmp_path / "newtonian" / "records.jsonl").read_text().splitlines()]
    assert all(r["passed"] is False and r["error"].startswith("agent does not apply")
               and r["details"]["agent_not_applicable"] for r in records)
