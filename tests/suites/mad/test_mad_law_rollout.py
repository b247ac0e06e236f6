"""The law score: an agent's `describe_law` functions plugged into the world's own
integrator (NumPy, in the sandbox) and rolled out from held-out initial states, scored
against the true law's rollout by the host's JAX integrator (an independent
implementation path: other array library, softened forces) relative to normal physics.

Baselines: the true law scores ~1, normal physics ~0; algebraically different but equal
laws score the same; a law right only where the episode's own trajectory went is
caught; hostile functions give 0 with a reason, never an exception."""

from __future__ import annotations

import json

import numpy as np
import pytest

from discoverygym.core import get_suite
from discoverygym.suites.mad import classical_physics as P
from discoverygym.suites.mad import constants as C
from discoverygym.suites.mad import fluid_world as F
from discoverygym.suites.mad import law_rollout
from discoverygym.suites.mad import quantum_world as Q
from discoverygym.suites.mad.classical import ClassicalWorld
from discoverygym.suites.mad.fluid_world import FluidWorld
from discoverygym.suites.mad.law_rollout import law_score, score_law_by_rollout
from discoverygym.suites.mad.law_sources import normal_law_source, true_law_source

SMALL = {"t_max": 5.0, "n_particles": 3, "dim": 2}


def pair_force_source(magnitude: str) -> str:
    """A pair force written for arrays and single pairs alike; `magnitude` in terms of
    r is |F| / (m_i m_j)."""
    return ("import numpy as np\n"
            "def pair_force(m_i, m_j, r_vec):\n"
            "    r_vec = np.asarray(r_vec, dtype=float)\n"
            "    r = np.sqrt(np.sum(r_vec**2, axis=-1))\n"
            f"    mag = {magnitude}\n"
            "    return (np.asarray(m_i) * np.asarray(m_j) * mag / r)[..., None] * r_vec\n")


NEWTON = pair_force_source("1 / r**2")
INVERSE_R = pair_force_source("1 / r")
# inverse-r written differently: the force vector as m m r_vec / |r|^2, in a loop-free
# but algebraically different form, and one written for single pairs only (math module).
INVERSE_R_OTHER = ("import numpy as np\n"
                   "def pair_force(m_i, m_j, r_vec):\n"
                   "    r_vec = np.asarray(r_vec, dtype=float)\n"
                   "    inv = 1.0 / np.einsum('...k,...k->...', r_vec, r_vec)\n"
                   "    return np.multiply(r_vec, (inv * m_j * m_i)[..., None])\n")
INVERSE_R_SCALAR = ("import math\n"
                    "def pair_force(m_i, m_j, r_vec):\n"
                    "    r2 = sum(c * c for c in r_vec)\n"
                    "    return [m_i * m_j * c / r2 for c in r_vec]\n")


def world(law: str, seed: int = 3, **options) -> ClassicalWorld:
    return ClassicalWorld(seed=seed, law=law, **{**SMALL, **options})


@pytest.fixture
def short_rollouts(monkeypatch):
    """Fewer, shorter held-out rollouts, for tests of failures and plumbing."""
    monkeypatch.setattr(C, "LAW_SCORE_STATES", 2)
    monkeypatch.setattr(C, "LAW_SCORE_HORIZON", 1.0)


def test_score_rule():
    assert law_score(0.0, 1.0) == 1.0
    assert law_score(0.25, 1.0) == 0.75
    assert law_score(2.0, 1.0) == 0.0  # worse than normal physics: clipped
    assert law_score(float("nan"), 1.0) == 0.0
    assert law_score(0.0, 0.0) == 1.0 and law_score(0.1, 0.0) == 0.0


def test_numpy_pair_force_path_equals_the_world_force():
    """The agent path (vector pair force on all ordered pairs, NumPy) against the
    world's radial law (JAX) for the same positions (softening negligible)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-8, 8, size=(4, 5, 3))
    mass = rng.uniform(0.5, 5, size=(4, 5))

    def newton(m_i, m_j, r_vec):
        return (m_i * m_j / np.linalg.norm(r_vec, axis=-1) ** 3)[:, None] * r_vec

    got = P.pairwise_forces(newton)(x, mass)
    with P.x64():
        want = np.asarray(P.pair_forces(P.as_state(x, x).x, P.as_bodies(mass, mass).mass,
                                        P.newton_force(), softening=1e-12))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_true_law_scores_one_normal_law_zero_and_equal_forms_equally():
    w = world("inv-r")
    scores = {name: score_law_by_rollout(w, source) for name, source in
              (("true", INVERSE_R), ("other", INVERSE_R_OTHER), ("scalar", INVERSE_R_SCALAR),
               ("newton", NEWTON))}
    for name in ("true", "other", "scalar"):
        assert scores[name]["score"] > 0.999999, scores[name]
        assert scores[name]["reference"] == "normal"
    # equal laws, equal scores (up to rounding amplified by the dynamics)
    assert abs(scores["true"]["score"] - scores["other"]["score"]) < 1e-9
    assert abs(scores["true"]["score"] - scores["scalar"]["score"]) < 1e-9
    assert scores["true"]["called"] == "arrays"
    assert scores["scalar"]["called"] == "one pair at a time"
    assert scores["newton"]["score"] < 1e-6
    assert scores["newton"]["error"] > 0.1  # normal physics is far off in this world


def test_a_law_right_only_where_the_episode_went_is_caught():
    """Ripple gravity where the episode's own spheres ever were (separations up to T_max),
    Newton elsewhere: the pointwise checks on those separations pass, the held-out
    rollouts do not."""
    w = world("ripple")
    x = w.trajectory().x[: int(w.defaults.t_max) + 1]
    separations = np.linalg.norm(x[:, None] - x[:, :, None], axis=-1)
    seen = separations[separations > 0]
    low, high = float(seen.min()), float(seen.max())
    ripple = "1 / r**2 * (1 + np.sin(2 * np.pi * r / 10))"
    partial = (f"np.where((r >= {low!r}) & (r <= {high!r}), {ripple}, 1 / r**2)")
    true_score = score_law_by_rollout(w, pair_force_source(ripple))
    partial_score = score_law_by_rollout(w, pair_force_source(partial))
    assert true_score["score"] > 0.9999
    assert partial_score["score"] < 0.95, partial_score
    assert partial_score["error"] > 1e3 * true_score["error"]


def test_inertia_function_is_plugged_in():
    accel = ("import numpy as np\n"
             "def acceleration(force, mass, memory):\n"
             "    b = (20.0 / mass)[:, None, None] * memory + np.eye(force.shape[-1])\n"
             "    a = np.linalg.solve(b, force[..., None])[..., 0] / mass[:, None]\n"
             "    return a, -0.1 * memory + a[:, :, None] * a[:, None, :]\n")
    w = world("kappa20")
    with_inertia = score_law_by_rollout(w, NEWTON + accel)
    without = score_law_by_rollout(w, NEWTON)
    assert with_inertia["score"] > 0.999, with_inertia
    assert "acceleration" in with_inertia["called"]
    assert without["score"] < 1e-6


def test_normal_world_is_scored_against_the_altered_laws():
    w = world("normal")
    right = score_law_by_rollout(w, NEWTON)
    wrong = score_law_by_rollout(w, INVERSE_R)
    assert right["reference"] == "median of the altered laws"
    assert right["score"] > 0.999999 and right["reference_error"] > 0.01
    assert wrong["score"] < 0.5


@pytest.mark.parametrize("body, reason", [
    ("    while True:\n        pass\n", "did not finish within"),
    (f"    return open({law_rollout.__file__!r}).read()\n", "filenotfounderror"),
    ("    import discoverygym\n", "modulenotfounderror"),
    ("    return [float('nan')] * len(r_vec)\n", "nan"),
    ("    return [1.0, 2.0, 3.0]\n", "shape"),
    ("    import os\n    os.write(1, b'x' * 10_000_000)\n    return [0.0, 0.0]\n",
     "no valid result"),
])
def test_hostile_functions_score_zero_with_a_reason(short_rollouts, body, reason):
    source = "def pair_force(m_i, m_j, r_vec):\n" + body
    out = score_law_by_rollout(world("inv-r"), source, timeout_s=8.0)
    assert out["score"] == 0.0
    assert reason in out["reason"].lower(), out
    assert len(json.dumps(out)) < 2000


def test_prints_of_the_agent_do_not_break_the_reply(short_rollouts):
    chatty = INVERSE_R.replace("    r_vec = np.asarray", "    print('debug', r_vec)\n"
                               "    r_vec = np.asarray")
    out = score_law_by_rollout(world("inv-r"), chatty)
    assert out["score"] > 0.999999, out


def test_forged_result_line_is_refused(short_rollouts):
    forged = ("import atexit, os, json\n"
              "atexit.register(lambda: os.write(1, b'\\n' + json.dumps({'trajectory': "
              "[[0.0]]}).encode() + b'\\n'))\n" + NEWTON)
    out = score_law_by_rollout(world("inv-r"), forged)
    assert out["score"] == 0.0 and "shape" in out["reason"]


def test_record_carries_the_law_score_and_pass_fail_is_unchanged(short_rollouts):
    suite = get_suite("mad")
    outcomes = []
    for source in (INVERSE_R, None):
        ep = suite.episode("classical-inv-r", seed=3, **SMALL)
        ep.call("end_measurements", {})
        if source is not None:
            result = ep.call("describe_law", {"text": "1/r", "python_source": source})
            # nothing about the rollouts reaches the agent
            assert not result.is_error and result.data is None
            assert result.text == "Your law was recorded (it is scored after the episode)."
        ep.call("predict", {"predictions": np.zeros((5, 3, 2)).tolist()})
        record = ep.record(agent="test")
        outcomes.append((record.passed, record.score))
        details = record.details
        assert set(details["law_rollout"]) >= {"score"}
        if source is None:
            assert details["law_score"] == 0.0
            assert "not called" in details["law_rollout"]["reason"]
        else:
            assert details["law_score"] > 0.999
            assert details["law_answer"]["fraction_correct"] == 1.0
    assert outcomes[0] == outcomes[1]


def test_held_out_states_are_new_and_never_shown():
    ep = get_suite("mad").episode("classical-inv-r", seed=3, **SMALL)
    w = ep._world
    request = w.law_rollout().request
    x = np.asarray(request["x"])
    assert not np.allclose(x[0], w.init.x)  # not the episode's own initial state
    assert request == w.law_rollout().request  # drawn from the seed
    assert request != world("inv-r", seed=4).law_rollout().request
    assert "truth" not in request and "law" not in json.dumps(request)
    seen = ep.prompt + json.dumps(ep.workspace(), default=str)
    seen += ep.call("end_measurements", {}).text + json.dumps(ep.workspace(), default=str)
    for value in x.ravel()[:6]:
        assert f"{value:.4f}" not in seen


# ---- fluid -------------------------------------------------------------------------
@pytest.fixture
def small_fluid(monkeypatch):
    monkeypatch.setattr(F, "LAW_SCORE_RESOLUTION", 32)
    monkeypatch.setattr(F, "LAW_SCORE_HORIZON", 2.0)


VORT5 = ("import numpy as np\ndef body_force(u, v, omega):\n"
         "    c = 5.0 * np.cos(np.pi / 16 * omega)\n    return [c * v, -c * u]\n")
# cos(2x) = 2 cos^2(x) - 1: the same law, written differently
VORT5_OTHER = ("import numpy as np\ndef body_force(u, v, omega):\n"
               "    c = 10.0 * np.cos(np.pi / 32 * omega) ** 2 - 5.0\n"
               "    return np.stack([c * v, -(u * c)])\n")
ZERO = "def body_force(u, v, omega):\n    return [0.0, 0.0]\n"
SCALAR_ONLY = ("import math\ndef body_force(u, v, omega):\n"
               "    c = 5.0 * math.cos(math.pi / 16 * omega)\n    return [c * v, -c * u]\n")


def test_fluid_law_score(small_fluid):
    w = FluidWorld(seed=1, law="vort5")
    true = score_law_by_rollout(w, VORT5)
    other = score_law_by_rollout(w, VORT5_OTHER)
    normal = score_law_by_rollout(w, ZERO)
    scalar = score_law_by_rollout(w, SCALAR_ONLY)
    assert true["score"] > 0.999999 and true["reference"] == "normal"
    assert abs(true["score"] - other["score"]) < 1e-9
    assert normal["score"] < 1e-6 and normal["error"] > 0.05
    assert scalar["score"] == 0.0 and "numpy arrays" in scalar["reason"].lower()


# ---- quantum -----------------------------------------------------------------------
BORN = "def outcome_weight(amplitude):\n    return amplitude ** 2\n"
LINEAR = "def outcome_weight(amplitude):\n    return amplitude\n"
# the same outcome rule: weights are normalised, so a constant factor changes nothing
LINEAR_SCALED = ("import numpy as np\ndef outcome_weight(amplitude):\n"
                 "    return 3.0 * np.sqrt(amplitude * amplitude)\n")
CORRELATION_25 = ("import numpy as np\ndef initial_correlation(x1, y1, x2, y2):\n"
                  "    return np.exp(-25.0 * ((x1 - x2)**2 + (y1 - y2)**2))\n")


@pytest.fixture
def small_quantum(monkeypatch):
    monkeypatch.setattr(Q, "LAW_SCORE_STATES", 1)
    monkeypatch.setattr(Q, "LAW_SCORE_TIME_FRACTIONS", (0.0, 7.0 / 6.0))


def test_quantum_law_score_and_equal_forms_that_the_pointwise_check_misses(small_quantum):
    ep = get_suite("mad").episode("quantum-p1", seed=1)
    ep.call("end_measurements", {})
    assert not ep.call("describe_law", {"text": "|Psi|, scaled",
                                        "python_source": LINEAR_SCALED}).is_error
    ep.call("predict", {"predictions": [0.1] * 5})
    details = ep.record(agent="test").details
    assert details["law_answer"]["fraction_correct"] == 0.0  # 3 |Psi| != |Psi| pointwise
    assert details["law_score"] > 0.999999  # but it predicts the same outcomes
    w = ep._world
    linear = score_law_by_rollout(w, LINEAR)
    born = score_law_by_rollout(w, BORN)
    assert abs(linear["score"] - details["law_score"]) < 1e-9
    assert born["score"] < 1e-9 and born["reference"] == "normal"


def test_quantum_initial_correlation_is_plugged_in(small_quantum):
    w = get_suite("mad").episode("quantum-combined", seed=1)._world
    rule_only = score_law_by_rollout(w, LINEAR)
    both = score_law_by_rollout(w, LINEAR + CORRELATION_25)
    assert both["score"] > 0.999999 and "initial_correlation" in both["called"]
    assert rule_only["score"] < 0.5
    scalar_only = ("import math\ndef outcome_weight(amplitude):\n"
                   "    return math.fabs(amplitude)\n")
    out = score_law_by_rollout(w, scalar_only)
    assert out["score"] == 0.0 and "numpy arrays" in out["reason"].lower()


# ---- the baselines: the true law of every world and law --------------------------------
@pytest.fixture
def tiny_rollouts(monkeypatch, short_rollouts):
    monkeypatch.setattr(F, "LAW_SCORE_RESOLUTION", 32)
    monkeypatch.setattr(F, "LAW_SCORE_HORIZON", 1.0)
    monkeypatch.setattr(Q, "LAW_SCORE_STATES", 1)
    monkeypatch.setattr(Q, "LAW_SCORE_TIME_FRACTIONS", (0.0, 7.0 / 6.0))


@pytest.mark.slow
@pytest.mark.parametrize("task", [f"{w}-{law}" for w, laws in (
    ("classical", ClassicalWorld.laws), ("fluid", FluidWorld.laws),
    ("quantum", Q.QuantumWorld.laws)) for law in sorted({laws[0], laws[-1]})])
def test_true_law_source_scores_one_in_every_world(tiny_rollouts, task):
    """The first and last law of each world here (`make test` time); every law of every
    world is in `bench/mad_law_rollout.py --table` (the README table)."""
    options = SMALL if task.startswith("classical") else {}
    w = get_suite("mad").episode(task, seed=2, **options)._world
    out = score_law_by_rollout(w, true_law_source(w))
    assert out["score"] > 0.999999, out
    assert out["reference"] == ("median of the altered laws" if task.endswith("-normal")
                                else "normal")


@pytest.mark.parametrize("task", ["classical-ripple", "fluid-vel0.5", "quantum-lambda5"])
def test_normal_law_source_scores_zero_in_altered_worlds(tiny_rollouts, task):
    options = SMALL if task.startswith("classical") else {}
    w = get_suite("mad").episode(task, seed=2, **options)._world
    out = score_law_by_rollout(w, normal_law_source(w.name))
    assert out["score"] < 1e-6 and out.get("error", 0) > 0, out


def test_law_baselines_through_the_runner_score_their_law():
    """`law-true` (privileged) and `law-normal` play the normal-physics baseline and state
    a law: the true one scores ~1 everywhere, normal physics ~0 in an altered world and
    ~1 where the law is normal; their predictions are the same, so only the law score
    differs."""
    from discoverygym.core import make_agent, play_agent

    def law_score(task: str, agent: str) -> dict:
        episode = get_suite("mad").episode(task, seed=0)
        play_agent(make_agent("mad", agent), episode)
        return episode.record(agent=agent).to_dict()

    true, normal = law_score("classical-inv-r", "law-true"), law_score("classical-inv-r",
                                                                        "law-normal")
    assert true["details"]["law_score"] > 0.999, true["details"]["law_rollout"]
    assert normal["details"]["law_score"] < 0.01, normal["details"]["law_rollout"]
    assert true["value"] == normal["value"]  # the same predictions
    assert law_score("classical-normal", "law-normal")["details"]["law_score"] > 0.999
