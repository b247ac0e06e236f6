"""The MaD measure-then-predict protocol on the classical world: noise and budget
accounting, determinism, every tool's bad input (clear error, nothing charged, the
episode goes on), the answer phase, describe_law, and the variants (visual, icl,
infer-kappa). Short worlds (T_max = 5, 3 discs in 2D) keep it fast."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from discoverygym.core import UnknownName, get_suite
from discoverygym.core.seeds import parse_seeds
from discoverygym.suites.mad.law_check import LawFunctionError, run_law_function

SMALL = {"t_max": 5.0, "n_particles": 3, "dim": 2}


def episode(task: str = "classical-normal", seed: int = 3, **options):
    return get_suite("mad").episode(task, seed=seed, **{**SMALL, **options})


def true_positions(ep, t: float) -> np.ndarray:
    """The noise-free positions (test-only access to the hidden world)."""
    return ep._world.trajectory().positions_at(t)


def assert_refused(ep, tool: str, args, *fragments: str) -> None:
    """The call fails with a message naming the problem, and nothing changes."""
    before = (ep.usage.cost, ep.usage.observations, ep.budget_left(), ep.done,
              len(ep.workspace()["measurement_log"]))
    result = ep.call(tool, args)
    assert result.is_error, result.text
    for fragment in fragments:
        assert fragment.lower() in result.text.lower(), result.text
    after = (ep.usage.cost, ep.usage.observations, ep.budget_left(), ep.done,
             len(ep.workspace()["measurement_log"]))
    assert after == before
    assert not ep._internal_errors


def measure(ep, t, what=(0, 1, 2), fidelity="high"):
    result = ep.call("measure", {"t": t, "what": list(what), "fidelity": fidelity})
    assert not result.is_error, result.text
    return result


# ---- measurement ---------------------------------------------------------------------
def test_measurement_is_truth_plus_noise_of_the_fidelity_and_costs_per_item():
    ep = episode()
    for t, fidelity, sigma, cost in ((1.0, "low", 0.1, 2), (2.0, "medium", 0.01, 5),
                                     (3.0, "high", 0.001, 10)):
        spent = ep.usage.cost
        result = measure(ep, t, (0, 2), fidelity)
        values = np.asarray(result.data["values"])
        assert values.shape == (2, 2)
        residual = values - true_positions(ep, t)[[0, 2]]
        assert np.all(np.abs(residual) < 5 * sigma)
        assert np.max(np.abs(residual)) > sigma / 100  # noise was added
        assert ep.usage.cost - spent == 2 * cost
        assert result.data["cost"] == 2 * cost
    assert ep.budget_left() == 200 - 2 * (2 + 5 + 10)
    ws = ep.workspace()
    assert ws["budget_remaining"] == ep.budget_left()
    assert len(ws["measurements"]) == 6  # one row per observed particle
    assert set(ws["measurements"]["particle"]) == {0, 2}


def test_noise_has_the_stated_sigma():
    # Many one-particle low-fidelity measurements at one time: the sample spread of
    # the noise matches sigma = 0.1 (2 coordinates x 100 draws).
    ep = episode()
    truth = true_positions(ep, 2.0)[1]
    draws = [np.asarray(measure(ep, 2.0, (1,), "low").data["values"][0]) - truth
             for _ in range(100)]
    assert np.std(draws) == pytest.approx(0.1, rel=0.2)
    assert abs(np.mean(draws)) < 0.03
    # 100 x 2 units spent: the budget is exhausted and the answer phase began by itself.
    assert ep.budget_left() == 0
    assert ep.workspace()["phase"] == "predict"
    assert len(ep.workspace()["queries"]) == 5


@pytest.mark.parametrize("protocol", ["paper", "discovery"])
def test_same_seed_same_measurements_and_truths_other_seed_differs(protocol):
    def play(seed):
        ep = episode(seed=seed, protocol=protocol)
        values = [measure(ep, t, (0, 1, 2), f).data["values"]
                  for t, f in ((0.5, "low"), (0.5, "high"), (4.0, "medium"))]
        queries = ep.call("end_measurements", {}).data["queries"]
        ep.call("predict", {"predictions": np.zeros((5, 3, 2)).tolist()})
        record = ep.record(agent="test")
        return values, queries, record.truth, record.value

    first, again, other = play(3), play(3), play(4)
    assert first == again
    assert first[0] != other[0] and first[2] != other[2]
    # paper: the world's own future; discovery: times after the fresh preparation
    start, horizon = (SMALL["t_max"], 30.0) if protocol == "paper" else (0.0, 20.0)
    assert all(start < q["t"] <= start + horizon for q in first[1])
    assert [q["t"] for q in first[1]] == sorted(q["t"] for q in first[1])


def test_the_initial_state_does_not_depend_on_the_law():
    a, b = episode("classical-normal"), episode("classical-inv-r")
    assert np.array_equal(a._world.init.x, b._world.init.x)
    assert np.array_equal(true_positions(a, 0.0), true_positions(b, 0.0))


def test_hidden_values_never_reach_the_agent():
    # The paper protocol hides the masses; under discovery they are told (see
    # test_mad_discovery.py, which checks that the truth and the law stay hidden there).
    ep = episode(protocol="paper")
    masses = ep._world.init.mass
    texts = [ep.prompt, json.dumps(ep.workspace(), default=str)]
    texts.append(measure(ep, 1.0).text)
    texts.append(ep.call("end_measurements", {}).text)
    texts.append(json.dumps(ep.workspace(), default=str))
    truth = ep._world.truth_at_queries()
    for text in texts:
        for m in masses:
            assert f"{m:.4f}" not in text and repr(float(m)) not in text
        for value in truth.ravel()[:6]:
            assert f"{value:.4f}" not in text


# ---- bad input -------------------------------------------------------------------------
def test_measure_bad_inputs_are_refused_without_charge():
    ep = episode()
    measure(ep, 2.0, (0,), "low")
    assert_refused(ep, "measure", {"t": 1.0, "what": [0], "fidelity": "low"},
                   "earlier than your previous")
    assert_refused(ep, "measure", {"t": 5.001, "what": [0], "fidelity": "low"}, "T_max")
    assert_refused(ep, "measure", {"t": -1.0, "what": [0], "fidelity": "low"})
    assert_refused(ep, "measure", {"t": 3.0, "what": [3], "fidelity": "low"},
                   "unknown particle", "0..2")
    assert_refused(ep, "measure", {"t": 3.0, "what": [-1], "fidelity": "low"}, "particle")
    assert_refused(ep, "measure", {"t": 3.0, "what": [0, 0], "fidelity": "low"}, "once")
    assert_refused(ep, "measure", {"t": 3.0, "what": [], "fidelity": "low"})
    assert_refused(ep, "measure", {"t": 3.0, "what": [True], "fidelity": "low"})
    assert_refused(ep, "measure", {"t": 3.0, "what": ["a"], "fidelity": "low"})
    assert_refused(ep, "measure", {"t": 3.0, "what": [0], "fidelity": "ultra"}, "fidelity")
    assert_refused(ep, "measure", {"t": float("nan"), "what": [0], "fidelity": "low"})
    assert_refused(ep, "measure", {"t": 3.0, "what": [0]}, "fidelity")
    assert_refused(ep, "measure", {"t": 3.0, "what": [0], "fidelity": "low", "x": 1})
    assert_refused(ep, "measure", "t=3")
    # over budget: 200 - 2 = 198 left; 3 particles at high fidelity 6 times = 180, then
    # one more all-particle high measurement (30) would overrun.
    for t in (2.5, 2.6, 2.7, 2.8, 2.9, 3.0):
        measure(ep, t)
    assert ep.budget_left() == 18
    assert_refused(ep, "measure", {"t": 3.1, "what": [0, 1, 2], "fidelity": "high"},
                   "only 18", "nothing was charged")
    # the episode goes on: a smaller measurement still works, at the same time
    measure(ep, 3.0, (1,), "high")
    assert ep.budget_left() == 8
    assert ep.workspace()["phase"] == "measure"


def test_answer_phase_bad_inputs_are_refused_without_charge():
    ep = episode()
    zeros = np.zeros((5, 3, 2)).tolist()
    assert_refused(ep, "predict", {"predictions": zeros}, "after end_measurements")
    assert_refused(ep, "describe_law", {"text": "x", "python_source": "def pair_force(): 0"},
                   "after end_measurements")
    measure(ep, 4.0)
    assert not ep.call("end_measurements", {}).is_error
    assert_refused(ep, "end_measurements", {}, "already ended")
    assert_refused(ep, "measure", {"t": 4.5, "what": [0], "fidelity": "low"}, "ended")
    assert_refused(ep, "predict", {"predictions": np.zeros((4, 3, 2)).tolist()},
                   "shape [4, 3, 2]", "[5, 3, 2]")
    assert_refused(ep, "predict", {"predictions": np.zeros((5, 3, 3)).tolist()}, "shape")
    assert_refused(ep, "predict", {"predictions": np.zeros((5, 2, 2)).tolist()}, "shape")
    ragged = [[[0.0, 0.0], [0.0], [0.0, 0.0]]] * 5
    assert_refused(ep, "predict", {"predictions": ragged}, "predictions")
    with_nan = np.zeros((5, 3, 2)).tolist()
    with_nan[2][1][0] = float("nan")
    assert_refused(ep, "predict", {"predictions": with_nan}, "nan")
    assert_refused(ep, "predict", {"predictions": [[["a", "b"]] * 3] * 5})
    assert_refused(ep, "predict", {"predictions": 1.0})
    assert_refused(ep, "predict", {})
    assert ep.usage.submissions == 0
    result = ep.call("predict", {"predictions": zeros})
    assert not result.is_error and ep.done
    assert ep.call("predict", {"predictions": zeros}).is_error  # the episode has ended


def test_describe_law_bad_sources_are_refused_and_may_be_retried():
    ep = episode()
    ep.call("end_measurements", {})
    assert_refused(ep, "describe_law", {"text": "t", "python_source": "def pair_force(:"},
                   "syntaxerror")
    assert_refused(ep, "describe_law", {"text": "t", "python_source": "def other(): pass"},
                   "no function named pair_force")
    assert_refused(ep, "describe_law", {"text": "t", "python_source":
                   "def pair_force(m_i, m_j, r_vec):\n    return [1.0, 2.0, 3.0, 4.0]"}, "shape")
    assert_refused(ep, "describe_law", {"text": "t", "python_source":
                   "def pair_force(m_i, m_j, r_vec):\n    raise ValueError('boom')"}, "boom")
    assert_refused(ep, "describe_law", {"text": "t"}, "python_source")
    good = ("import math\ndef pair_force(m_i, m_j, r_vec):\n"
            "    r = math.sqrt(sum(c * c for c in r_vec))\n"
            "    return [m_i * m_j * c / r**3 for c in r_vec]\n")
    assert not ep.call("describe_law", {"text": "Newton", "python_source": good}).is_error
    assert_refused(ep, "describe_law", {"text": "again", "python_source": good}, "once")


def test_law_function_runs_out_of_process_with_a_time_limit():
    with pytest.raises(LawFunctionError, match="within"):
        run_law_function("def f(**kw):\n    while True: pass", "f", [{}], timeout_s=2.0)
    out = run_law_function("import os\ndef f(a):\n    return [a, os.getpid()]", "f",
                           [{"a": 1.0}, {"a": 2.0}])
    assert out.shape == (2, 2) and list(out[:, 0]) == [1.0, 2.0]
    import os
    assert out[0, 1] != os.getpid()


# ---- answers and scoring -----------------------------------------------------------------
def test_perfect_prediction_scores_one_and_persistence_scores_zero():
    # Persistence is the reference of the paper protocol (discovery: test_mad_discovery).
    ep = episode(protocol="paper")
    measure(ep, 5.0)
    ep.call("end_measurements", {})
    truth = ep._world.truth_at_queries()
    ep.call("predict", {"predictions": truth.tolist()})
    record = ep.record(agent="test")
    assert record.value == 0.0 and record.score == 1.0 and record.passed
    assert record.metric == "nrmse"
    assert record.details["skill"] == 1.0
    assert record.details["constants"]["ours"]["inertia_decay"] > 0

    ep = episode(protocol="paper")
    ep.call("end_measurements", {})
    at_t_max = true_positions(ep, 5.0)
    ep.call("predict", {"predictions": [at_t_max.tolist()] * 5})
    record = ep.record(agent="test")
    assert record.details["skill"] == pytest.approx(0.0, abs=1e-12)
    assert not record.passed
    expected = np.sqrt(np.mean(np.sum((at_t_max - truth) ** 2, axis=-1))) / (20 * np.sqrt(2))
    assert record.value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("law, right", [("normal", 3), ("inv-r", 2)])
def test_describe_law_scores_the_function_against_the_true_law(law, right, monkeypatch):
    from discoverygym.suites.mad import constants

    # the record also rolls the law out (tests/suites/mad/test_mad_law_rollout.py): keep it short
    monkeypatch.setattr(constants, "LAW_SCORE_STATES", 2)
    monkeypatch.setattr(constants, "LAW_SCORE_HORIZON", 1.0)
    def source(power):
        return ("import numpy as np\ndef pair_force(m_i, m_j, r_vec):\n"
                "    r_vec = np.asarray(r_vec)\n"
                f"    return m_i * m_j * r_vec / np.linalg.norm(r_vec) ** {power}\n")

    fractions = {}
    for power in (2, 3):
        ep = episode(f"classical-{law}")
        ep.call("end_measurements", {})
        assert not ep.call("describe_law", {"text": f"1/r^{power - 1}",
                                            "python_source": source(power)}).is_error
        ep.call("predict", {"predictions": np.zeros((5, 3, 2)).tolist()})
        fractions[power] = ep.record().details["law_answer"]["fraction_correct"]
    assert fractions[right] == 1.0
    assert fractions[5 - right] < 0.1


# ---- variants ----------------------------------------------------------------------------
def test_visual_variant_returns_a_picture_instead_of_numbers():
    ep = episode(variant="visual")
    assert "picture" in ep.prompt
    result = measure(ep, 1.0, (0, 2), "high")
    assert "values" not in result.data and len(result.images) == 1
    image = Image.open(io.BytesIO(result.images[0])).convert("RGB")
    assert image.size == (512, 512)
    # The disc of particle 0 is drawn (in its palette colour) at its measured position.
    x, y = true_positions(ep, 1.0)[0]
    scale = (512 - 48) / 20
    px, py = 24 + (x + 10) * scale, 512 - 24 - (y + 10) * scale
    assert image.getpixel((round(px), round(py))) == (0xD6, 0x27, 0x28)
    assert ep.workspace()["measurements"].empty  # no numbers leak through the table
    ep3 = episode(variant="visual", dim=3)
    assert "projection onto the x-y plane" in ep3.prompt
    assert "projection" not in ep.prompt
    assert len(measure(ep3, 1.0).images) == 1


def test_icl_variant_runs_trials_with_summaries_and_scores_the_last():
    ep = episode(variant="icl", trials=2)
    assert "2 trials" in ep.prompt
    measure(ep, 4.0)
    first_queries = ep.call("end_measurements", {}).data["queries"]
    result = ep.call("predict", {"predictions": np.zeros((5, 3, 2)).tolist()})
    assert not result.is_error and not ep.done
    assert "Trial 2 starts" in result.text
    ws = ep.workspace()
    assert ws["phase"] == "measure" and ws["trial"] == 1
    assert ws["budget_remaining"] == 200 and ws["time_of_last_measurement"] is None
    assert len(ws["previous_trials"]) == 1 and "trial 1" in ws["trial_summary"]
    assert "trial 2 of 2" in ep.prompt and "Earlier trials" in ep.prompt
    measure(ep, 1.0)  # time restarted at 0
    second_queries = ep.call("end_measurements", {}).data["queries"]
    assert second_queries != first_queries
    ep.call("predict", {"predictions": ep._world.truth_at_queries(1).tolist()})
    record = ep.record(agent="test")
    assert ep.done and record.value == 0.0
    assert len(record.details["trial_errors"]) == 2 and record.details["trial_errors"][0] > 0


def test_infer_kappa_variant_scores_the_estimate_by_relative_error():
    suite = get_suite("mad")
    kappas = set()
    for seed in range(12):
        ep = suite.episode("classical-infer-kappa", seed=seed, **SMALL)
        truth = ep._world.kappa
        kappas.add(truth)
        tools = {t["function"]["name"] for t in ep.tools()}
        assert "submit_estimate" in tools and "predict" not in tools
        assert "kappa" in ep.prompt and f"kappa = {truth:g}" not in ep.prompt
        assert_refused(ep, "submit_estimate", {"value": truth}, "after end_measurements")
        text = ep.call("end_measurements", {}).text
        assert "Estimate kappa" in text
        ep.call("submit_estimate", {"value": truth + 3.0})
        record = ep.record(agent="test")
        assert not record.passed
        assert record.value == pytest.approx(3.0 / max(truth, 5.0))
    assert kappas <= {0.0, 5.0, 10.0, 15.0, 20.0} and len(kappas) >= 3
    ep = suite.episode("classical-infer-kappa", seed=0, **SMALL)
    ep.call("end_measurements", {})
    ep.call("submit_estimate", {"value": ep._world.kappa})
    record = ep.record()
    assert record.passed and record.value == 0.0 and record.metric == "kappa_relative_error"


# ---- suite plumbing ----------------------------------------------------------------------
def test_plan_and_seed_parsing():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0,3,5") == [0, 3, 5]
    assert parse_seeds("0-1,7") == [0, 1, 7]
    with pytest.raises(ValueError):
        parse_seeds("5-2")
    suite = get_suite("mad")
    specs = suite.episodes(world="classical", seeds=[0, 1])
    assert {s.task_id for s in specs} == {f"classical-{law}" for law in
                                          ("normal", "kappa10", "kappa20", "inv-r",
                                           "ripple", "combined")}
    assert len(specs) == 12
    icl = suite.episodes(world="classical", variant="icl", seeds=[0])
    assert {s.task_id for s in icl} == {"classical-normal", "classical-kappa10"}
    assert all(s.options["trials"] == 8 for s in icl)
    infer = suite.episodes(world="classical", variant="infer-kappa", seeds=[0, 1])
    assert [s.task_id for s in infer] == ["classical-infer-kappa"] * 2
    with pytest.raises(ValueError):
        suite.episodes(world="classical", law="gravity2")
    with pytest.raises(ValueError):
        suite.episodes(world="classical", variant="infer-mass")
    parsed = suite.parse_options({"world": "classical", "law": "ripple",
                                  "n-particles": "4", "dim": "2"})
    assert parsed == {"world": "classical", "law": "ripple", "n_particles": 4, "dim": 2}
    with pytest.raises(UnknownName, match="no option --seeds"):  # the runner's, not mad's
        suite.parse_options({"seeds": "0-2"})


def test_float64_stays_local_to_the_classical_world():
    import jax.numpy as jnp

    ep = episode()
    values = np.asarray(measure(ep, 1.0).data["values"])
    assert ep._world.trajectory().x.dtype == np.float64
    assert values.dtype == np.float64
    # The rest of the process keeps JAX's float32 default.
    assert jnp.zeros(1).dtype == jnp.float32
    assert (jnp.ones(1) / 3).dtype == jnp.float32


def test_classical_jax_calls_are_pinned_to_the_cpu():
    # Chaotic over T_max = 300: one platform keeps a seed's truths the same on machines
    # with and without a GPU, whatever device JAX would pick by default.
    import jax

    from discoverygym.suites.mad import classical_physics as P

    cpu = jax.devices("cpu")[0]
    with P.x64():
        assert jax.config.jax_default_device == cpu
        state = P.as_state(np.zeros((2, 3)), np.ones((2, 3)))
        assert state.x.devices() == {cpu} and state.x.dtype == np.float64
    assert jax.config.jax_default_device is None


def test_trajectory_is_integrated_once_then_read_from_memory_or_disk(monkeypatch):
    from discoverygym.suites.mad import classical

    world = episode(seed=11)._world
    first = world.trajectory()
    assert episode(seed=11)._world.trajectory() is first  # in-process cache
    from discoverygym.core.paths import cache_dir

    path = next(cache_dir("mad", "classical").glob("*/seed11.npz"))

    def no_integration(*args, **kwargs):
        raise AssertionError("integrated again")

    monkeypatch.setattr(classical, "integrate_snapshots", no_integration)
    classical._CACHE.clear_memory()
    from_disk = episode(seed=11)._world.trajectory()
    assert from_disk is not first and np.array_equal(from_disk.x, first.x)
    path.write_bytes(b"torn")  # a damaged file is recomputed, not trusted
    monkeypatch.undo()
    classical._CACHE.clear_memory()
    again = episode(seed=11)._world.trajectory()
    assert np.array_equal(again.x, first.x)


def test_a_law_function_that_forges_its_result_line_is_an_error_not_a_crash():
    """Before: a last stdout line of deeply nested JSON raised RecursionError on the
    host (json.loads), out of describe_law's check."""
    forged = ("import atexit, os\n"
              "atexit.register(lambda: os.write(1, ('[' * 20000 + ']' * 20000 + '\\n')"
              ".encode()))\n"
              "def f(**kw):\n    return [1.0]\n")
    with pytest.raises(LawFunctionError, match="no valid result"):
        run_law_function(forged, "f", [{}], timeout_s=20.0)
    huge = ("import atexit, os\n"
            "atexit.register(lambda: os.write(1, ('{\"outputs\": [[1' + '0' * 5000 + ']]}\\n')"
            ".encode()))\n"
            "def f(**kw):\n    return [1.0]\n")
    with pytest.raises(LawFunctionError, match="no valid result"):
        run_law_function(huge, "f", [{}], timeout_s=20.0)
