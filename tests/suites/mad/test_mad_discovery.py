"""The classical world's discovery protocol (the default): the answer phase reveals a
fresh preparation (exact state of new spheres at t = 0) and asks for its positions at
the query times. The truth is the true law rolled out from it, the reference normal
physics from it (the median altered law where normal physics is the truth). Checked: the
preparation is new, public and deterministic and carries neither truth nor law; bad
answers are refused free; the truth against an independent NumPy integration; normal
physics scores skill 0 on altered laws; the law-oracle fits the law and passes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from discoverygym.core import get_suite, make_agent
from discoverygym.suites.mad import classical_physics as P
from discoverygym.suites.mad import constants as C
from discoverygym.suites.mad import streams
from discoverygym.suites.mad.baselines.law_oracle import ClassicalLawOracle
from discoverygym.suites.mad.classical import LAW_PROSE, nrmse

SMALL = {"t_max": 5.0, "n_particles": 3, "dim": 2}


def episode(task: str = "classical-kappa20", seed: int = 3, **options):
    return get_suite("mad").episode(task, seed=seed, **{**SMALL, **options})


def play(task: str, agent: str, seed: int = 3, **options):
    ep = episode(task, seed, **options)
    make_agent("mad", agent).solve(ep.view())
    record = ep.record(agent=agent)
    assert record.error is None, record.error
    return ep, record


def test_the_preparation_is_new_public_and_deterministic():
    ep = episode()
    assert ep.options["protocol"] == "discovery"
    result = ep.call("end_measurements", {})
    prep = result.data["preparation"]
    assert ep.workspace()["preparation"] == prep
    assert "preparation" in result.text and "preparation" in ep.prompt
    world = ep._world
    x = np.asarray(prep["x"])
    assert x.shape == (3, 2) and np.asarray(prep["v"]).shape == (3, 2)
    assert all(0.5 <= m <= 5.0 for m in prep["mass"]) and all(0.1 <= r <= 0.5
                                                              for r in prep["radius"])
    # its own stream: not the world's initial state, not a law-score state
    assert not np.allclose(x, world.init.x)
    held_out = np.asarray(world.law_rollout().request["x"])
    assert not any(np.allclose(x, h) for h in held_out)
    assert streams.MAD_PREPARATION not in (streams.MAD_WORLD_INIT, streams.MAD_LAW_SCORE)
    # the same seed gives the same preparation under every law; another trial another
    other_law = episode("classical-inv-r")
    other_law.call("end_measurements", {})
    assert other_law.workspace()["preparation"] == prep
    assert world.answer_facts(1)["preparation"] != prep
    # query times after the preparation, within the horizon of 20
    times = [q["t"] for q in ep.workspace()["queries"]]
    assert times == sorted(times) and 0 < times[0] and times[-1] <= C.DISCOVERY_QUERY_HORIZON


@pytest.mark.parametrize("law", ["kappa20", "ripple"])
def test_neither_the_truth_nor_the_law_reaches_the_agent(law):
    ep = episode(f"classical-{law}")
    seen = [ep.prompt, json.dumps(ep.workspace(), default=str)]
    result = ep.call("measure", {"t": 1.0, "what": [0, 1, 2], "fidelity": "high"})
    seen += [result.text, json.dumps(result.data)]
    result = ep.call("end_measurements", {})
    seen += [result.text, json.dumps(result.data), json.dumps(ep.workspace(), default=str)]
    truth = ep._world.truth_at_queries()
    for text in seen:
        for value in truth.ravel():
            assert f"{value:.4f}" not in text
        assert law not in text and LAW_PROSE[law] not in text
    # The masses of the measured world are told (the law is what is to be found).
    for mass in ep._world.init.mass:
        assert f"{mass:.6f}" in ep.prompt
    assert ep.workspace()["world_facts"]["masses"] == ep._world.init.mass.tolist()


def test_bad_predictions_are_refused_and_cost_nothing():
    ep = episode()
    refused = ep.call("predict", {"predictions": np.zeros((5, 3, 2)).tolist()})
    assert refused.is_error and "end_measurements" in refused.text
    ep.call("end_measurements", {})
    good = np.zeros((5, 3, 2))
    nan = good.copy()
    nan[2, 1, 0] = np.nan
    for bad, fragment in ((np.zeros((5, 3, 3)), "shape"), (np.zeros((4, 3, 2)), "shape"),
                          ([[[0.0, 0.0]] * 3] * 4 + [[[0.0]] * 3], "shape"),
                          (nan.tolist(), "NaN")):
        bad = bad.tolist() if isinstance(bad, np.ndarray) else bad
        result = ep.call("predict", {"predictions": bad})
        assert result.is_error and fragment.lower() in result.text.lower(), result.text
        assert "nothing was charged" in result.text.lower()
        assert not ep.done and ep.usage.submissions == 0 and ep.usage.cost == 0
    assert not ep.call("predict", {"predictions": good.tolist()}).is_error
    assert ep.done


def numpy_rollout(x, v, mass, radius, kappa, decay, steps, inverse_r=False):
    """Independent reference: the world's scheme written out in NumPy loops, with
    a = (m I + kappa S)^-1 F by np.linalg.solve (the world uses the adjugate),
    elastic pair impulses from the pre-collision velocities, and reflecting walls."""
    n, d = x.shape
    x, v, s = x.copy(), v.copy(), np.zeros((n, d, d))
    out, done = [], 0
    for target in steps:
        for _ in range(target - done):
            force = np.zeros((n, d))
            for i in range(n):
                for j in range(n):
                    if i != j:
                        sep = x[j] - x[i]
                        r = np.sqrt(sep @ sep + C.SOFTENING**2)
                        magnitude = mass[i] * mass[j] / (r if inverse_r else r**2)
                        force[i] += magnitude * sep / r
            acc = np.stack([np.linalg.solve(mass[i] * np.eye(d) + kappa * s[i], force[i])
                            for i in range(n)])
            v = v + C.DT * acc
            x = x + C.DT * v
            s = s + C.DT * (-decay * s + acc[:, :, None] * acc[:, None, :])
            dv = np.zeros_like(v)
            for i in range(n):
                for j in range(n):
                    sep = x[j] - x[i]
                    dist = np.linalg.norm(sep)
                    if i == j or dist >= radius[i] + radius[j]:
                        continue
                    normal = sep / dist
                    approach = (v[j] - v[i]) @ normal
                    if approach < 0:
                        dv[i] += 2 * mass[j] / (mass[i] + mass[j]) * approach * normal
            v = v + dv
            limit = C.BOX_HALF_WIDTH - radius[:, None]
            v = np.where(((x > limit) & (v > 0)) | ((x < -limit) & (v < 0)), -v, v)
        done = target
        out.append(x.copy())
    return np.stack(out)


@pytest.mark.parametrize("law, kappa, inverse_r", [("kappa20", 20.0, False),
                                                   ("combined", 10.0, True)])
def test_truth_matches_an_independent_numpy_integration(law, kappa, inverse_r):
    world = episode(f"classical-{law}", query_horizon=6.0)._world
    prep = world.preparation()
    steps = [int(round(q["t"] / C.DT)) for q in world.queries()]
    reference = numpy_rollout(prep.x, prep.v, prep.mass, prep.radius, kappa,
                              world.inertia_decay, steps, inverse_r)
    assert np.max(np.abs(world.truth_at_queries() - reference)) < 1e-8
    # and the normal-physics reference is the same preparation under Newton
    newton = numpy_rollout(prep.x, prep.v, prep.mass, prep.radius, 0.0, 0.1, steps)
    assert np.max(np.abs(world.reference_prediction() - newton)) < 1e-8
    assert nrmse(newton, reference, 2) > 1e-4  # the law matters on this preparation


def test_normal_physics_scores_zero_on_altered_laws_and_passes_the_normal_law():
    for law in ("kappa20", "ripple", "inv-r"):
        ep, record = play(f"classical-{law}", "newtonian")
        assert record.details["skill"] == 0.0 and not record.passed
        assert record.details["reference"].startswith("normal physics")
        assert ep.usage.cost == 0  # nothing to learn from measurements about Newton
        for trivial in ("last-seen", "ballistic"):
            assert not play(f"classical-{law}", trivial)[1].passed
    ep, record = play("classical-normal", "newtonian")
    assert record.passed and record.value < 1e-12
    # Where normal physics is the truth, the reference is the median altered law.
    world = ep._world
    truth = world.truth_at_queries()
    errors = sorted(nrmse(world.preparation_rollout(law), truth, 2)
                    for law in world.laws if law != "normal")
    assert record.details["reference_error"] == pytest.approx(errors[2], rel=1e-12)
    assert record.details["reference"].startswith("the median altered law")
    for trivial in ("last-seen", "ballistic"):
        assert not play("classical-normal", trivial)[1].passed


def test_icl_gives_each_trial_its_own_preparation():
    ep, record = play("classical-normal", "newtonian", variant="icl", trials=2)
    first = ep.workspace()["previous_trials"][0]["preparation"]
    assert first != record.details["preparation"]
    assert record.details["trial_errors"] == [0.0, 0.0]


@pytest.mark.parametrize("law, seed, fitted", [("combined", 1, {"kappa": 10.0}),
                                               ("ripple", 3, {"amplitude": 1.0,
                                                              "wavelength": 10.0})])
def test_law_oracle_fits_the_law_from_its_measurements_and_passes(law, seed, fitted):
    # The benchmark's 3 spheres in 3D; a world of T_max = 10 (the oracle measures [0, 10]).
    ep = get_suite("mad").episode(f"classical-{law}", seed=seed, t_max=10.0)
    oracle = ClassicalLawOracle()
    oracle.solve_privileged(ep)
    record = ep.record(agent="law-oracle")
    assert record.passed and record.details["skill"] > 0.9
    assert 0 < ep.usage.cost <= 200
    for name, truth in fitted.items():
        assert oracle.fitted[name] == pytest.approx(truth, rel=0.05)
    _, newtonian = play(f"classical-{law}", "newtonian", seed=seed, t_max=10.0,
                        n_particles=3, dim=3)
    assert newtonian.value > 5 * record.value


def test_mirrored_walls_follow_the_worlds_bounce_within_one_step():
    # The oracle differentiates through `mirror_walls`; its path must stay within
    # |v| dt of the world's, which leaves the position past the wall for a step.
    x = np.array([[9.0, 0.0], [-9.0, 3.0]])
    v = np.array([[1.5, 0.2], [-0.7, 0.0]])
    mass, radius = np.array([1.0, 2.0]), np.array([0.3, 0.2])
    paths = []
    for mirror in (False, True):
        step = P.make_field_step(P.radial_forces(P.newton_force(), xp=np),
                                 P.standard_inertia(xp=np), xp=np, mirror=mirror)
        state, bodies = P.State(x, v, np.zeros((2, 2, 2))), P.Bodies(mass, radius)
        xs = []
        for _ in range(3000):
            state = step(state, bodies)
            xs.append(state.x)
        paths.append(np.stack(xs))
    world, mirrored = paths
    assert world[:, 0, 0].max() > 9.7 - 1e-4 and world[-1, 0, 0] < 9.0  # it bounced
    assert np.max(np.abs(world - mirrored)) <= 2 * 1.6 * C.DT
    assert np.all(np.abs(mirrored[:, 0, 0]) <= 9.7) and np.all(np.abs(mirrored[:, 1, 0]) <= 9.8)


def test_infer_kappa_still_asks_for_kappa_under_discovery():
    ep = get_suite("mad").episode("classical-infer-kappa", seed=2, **SMALL)
    assert ep.options["protocol"] == "discovery"
    assert "Estimate kappa" in ep.prompt
    assert ep.workspace()["world_facts"]["masses"] == ep._world.init.mass.tolist()
    make_agent("mad", "last-seen").solve(ep.view())
    record = ep.record(agent="last-seen")
    kappa = ep._world.kappa
    assert record.answer["value"] == 10.0  # the prior median: no model of the law
    assert record.value == pytest.approx(abs(10.0 - kappa) / max(kappa, 5.0))
    assert "preparation" not in ep.workspace()
