"""The fluid world through the suite: cached trajectories, exact reads at any time,
bad input refused without charge, and the baselines (the standard-Navier-Stokes agent
must beat persistence by a wide margin on the normal law and lose its edge when the
law is altered). Small grids and a short T_max keep it fast."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from discoverygym.core import get_suite
from discoverygym.physics import fluid_solver as fs
from discoverygym.suites.mad import fluid_world as fw
from discoverygym.suites.mad.baselines import fluid_quantum as agents

# The measured world's own future: the published (`paper`) protocol; the default
# `discovery` protocol is tested in tests/suites/mad/test_mad_fluid_discovery.py.
OPTIONS = {"resolution": 48, "t_max": 8.0, "query_horizon": 4.0, "protocol": "paper"}
SEEDS = range(3)


def episode(law: str, seed: int = 0):
    return get_suite("mad").episode(f"fluid-{law}", seed=seed, **OPTIONS)


def test_trajectory_reads_match_a_direct_run():
    world = fw.FluidWorld(seed=1, law="vort5", **OPTIONS)
    t = 5.37
    points = np.array([[0.3, 1.2], [4.0, 5.5], [2.2, 0.1]])
    layer = fw.sample_shear_layer(1)
    direct = fs.simulate(fs.double_shear_layer(48, layer.thickness, layer.amplitude), [t],
                         nu=fw.VISCOSITY, modulation=fw.LAWS["vort5"]).omega_hat[-1]
    expected = fs.evaluate_at_points(direct, points[:, 0], points[:, 1])
    got = world.trajectory().vorticity(t, points)
    # different chunkings of the same adaptive scheme: equal to its time-step error
    assert np.allclose(got, expected, atol=1e-4 * np.max(np.abs(expected)))
    # the disk cache gives the same snapshots to a fresh world
    fw._CACHE.clear_memory()
    again = fw.FluidWorld(seed=1, law="vort5", **OPTIONS).trajectory().vorticity(t, points)
    assert np.array_equal(again, got)


def test_same_seed_same_initial_state_under_every_law():
    first = fw.FluidWorld(seed=4, law="normal", **OPTIONS).trajectory().field_hat_at(0.0)
    other = fw.FluidWorld(seed=4, law="vel0.7", **OPTIONS).trajectory().field_hat_at(0.0)
    assert np.array_equal(first, other)
    layer = fw.sample_shear_layer(4)
    assert fw.THICKNESS_RANGE[0] <= layer.thickness <= fw.THICKNESS_RANGE[1]
    assert fw.AMPLITUDE_RANGE[0] <= layer.amplitude <= fw.AMPLITUDE_RANGE[1]


def test_bad_measurements_are_refused_without_charge():
    view = episode("normal").view()
    bad = [[[7.0, 1.0]], [[1.0]], [], [[0.1, 0.2]] * 65, "everywhere", [[float("nan"), 1.0]]]
    for what in bad:
        result = view.call("measure", {"t": 1.0, "what": what, "fidelity": "low"})
        assert result.is_error, what
        assert view.workspace()["budget_remaining"] == fw.BUDGET
    result = view.call("measure", {"t": 9.0, "what": [[1.0, 1.0]], "fidelity": "low"})
    assert result.is_error and "T_max" in result.text
    ok = view.call("measure", {"t": 2.0, "what": [[1.0, 1.0], [2.0, 2.0]], "fidelity": "high"})
    assert not ok.is_error and len(ok.data["values"]) == 2
    assert view.workspace()["budget_remaining"] == fw.BUDGET - 20


def test_prompt_and_workspace_hide_the_truth():
    ep = episode("vort10", seed=2)
    text = ep.view().prompt + repr(ep.view().workspace()["world_facts"])
    layer = fw.sample_shear_layer(2)
    assert f"{layer.thickness:.4f}" not in text and f"{layer.amplitude:.4f}" not in text
    assert "vort10" not in text and "gamma" not in text


def errors(law: str, agent_class: type) -> list[float]:
    out = []
    for seed in SEEDS:
        ep = episode(law, seed)
        agent_class().solve(ep.view())
        record = ep.record(agent="test")
        assert record.value is not None
        out.append(record.value)
    return out


@pytest.fixture(scope="module")
def persistence_normal() -> list[float]:
    return errors("normal", agents.FluidPersistence)


def test_navier_stokes_agent_beats_persistence_on_the_normal_law(persistence_normal):
    ns = errors("normal", agents.FluidNavierStokes)
    # measured (48^2, T_max 8): persistence ~0.3-0.9, Navier-Stokes ~0.005
    assert all(a < 0.1 * b for a, b in zip(ns, persistence_normal, strict=True))
    assert max(ns) < 0.05


def test_altered_law_defeats_the_standard_model():
    ns = errors("vel0.7", agents.FluidNavierStokes)
    persistence = errors("vel0.7", agents.FluidPersistence)
    # the model misses T_max by far and falls back to persistence: no edge left
    assert statistics.median(ns) > 0.9 * statistics.median(persistence)
    assert statistics.median(ns) > 0.2


def test_alien_force_law_function():
    world = fw.FluidWorld(seed=0, law="vort5", **OPTIONS)
    law = world.law_function()
    inputs = law.sample_inputs(np.random.default_rng(0))
    truth = law.truth(inputs)
    d = inputs[0]
    c = 5.0 * np.cos(np.pi / 16 * d["omega"])
    assert np.allclose(truth[0], [c * d["v"], -c * d["u"]])
    assert np.all(fw.FluidWorld(seed=0, law="normal", **OPTIONS).law_function().truth(
        inputs) == 0)
