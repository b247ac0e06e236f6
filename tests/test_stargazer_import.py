"""Published task files: a hand-written file imports as specified, our tasks round-trip
through the published format, files that are not rv_only are refused, and a run with
--tasks-from scores imported tasks with the same evaluator."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core import register_agents
from discoverygym.suites.stargazer import StargazerSuite
from discoverygym.suites.stargazer.bank import bank_task
from discoverygym.suites.stargazer.generator import generate_task
from discoverygym.suites.stargazer.importer import (
    ImportRefused,
    load_published,
    task_from_published,
    to_published,
)

register_agents("stargazer", {"oracle": "discoverygym.suites.stargazer.oracle:Oracle"})

STAR_MASS = 0.9
PLANET = {"P_days": 12.5, "m_sin_i_mjup": 0.2, "e": 0.25, "inc_rad": 1.2, "Omega_rad": 0.0,
          "omega_rad": 2.0, "l_rad": 7.0, "m_true_mjup": None}


def _hand_written() -> dict:
    """A published-format file written by hand: one planet, two instruments with the
    published labels, an offset each, times not starting at 0 and not sorted."""
    times = [30.0, 3.5, 10.25, 17.0, 21.5, 25.0, 33.0, 40.5, 44.0, 51.0]
    labels = ["instB", "instA", "instA", "instA", "instA", "instB", "instB", "instB",
              "instA", "instB"]
    # K by the spec's formula, computed here independently of the package
    k = (28.4329 * PLANET["m_sin_i_mjup"] * STAR_MASS ** (-2 / 3)
         * (PLANET["P_days"] / 365.25) ** (-1 / 3) / math.sqrt(1 - PLANET["e"] ** 2))
    t_ref = min(times)
    rvs = []
    for t, lab in zip(times, labels, strict=True):
        m = PLANET["l_rad"] - PLANET["omega_rad"] + 2 * math.pi * (t - t_ref) / PLANET["P_days"]
        big_e = m
        for _ in range(100):
            big_e = m + PLANET["e"] * math.sin(big_e)          # fixed point, e < 1
        nu = 2 * math.atan2(math.sqrt(1 + PLANET["e"]) * math.sin(big_e / 2),
                            math.sqrt(1 - PLANET["e"]) * math.cos(big_e / 2))
        rv = k * (math.cos(nu + PLANET["omega_rad"]) + PLANET["e"] * math.cos(PLANET["omega_rad"]))
        rvs.append(rv + (5.0 if lab == "instA" else -3.0))
    return {
        "task_id": "handmade_001",
        "truth_difficulty": 4,
        "difficulty_details": {"n_planets": 1},
        "config": {
            "star": {"M_star_sun": STAR_MASS, "gamma_ms": 0.0},
            "planets": [dict(PLANET)],
            "instruments": [
                {"label": "instA", "gamma_ms": 5.0, "sigma_white_ms": 1.0, "sigma_jitter_ms": 0.5},
                {"label": "instB", "gamma_ms": -3.0, "sigma_white_ms": 2.0,
                 "sigma_jitter_ms": 0.25}],
            "noise": {"sigma_white_ms": 1.0, "sigma_jitter_ms": 0.5,
                      "gp": {"use_gp": True, "sigma_ms": 0.3, "period_days": 20.0, "Q0": 1.0,
                             "dQ": 0.1, "f": 0.5}},
            "engine": "keplerian"},
        "observations": {"times_days": times, "rvs_ms": rvs,
                         "sigmas_ms": [2.0 if lab == "instB" else 1.0 for lab in labels],
                         "instruments": labels},
        "meta": {"rv_semantics": "rv_only"},
        "_k_ms": k,
    }


def test_hand_written_file_imports_as_specified(tmp_path):
    raw = _hand_written()
    path = tmp_path / "handmade.json"
    path.write_text(json.dumps(raw))
    task = load_published(path)
    assert task.task_id == "handmade" and task.source == "imported" and task.tier == "medium"
    order = np.argsort(raw["observations"]["times_days"])
    assert np.array_equal(task.times_days, np.array(raw["observations"]["times_days"])[order])
    assert np.array_equal(task.rv_ms, np.array(raw["observations"]["rvs_ms"])[order])
    assert task.labels == ("inst_A", "inst_B")
    expected_labels = np.array(["inst_A" if x == "instA" else "inst_B"
                                for x in np.array(raw["observations"]["instruments"])[order]])
    assert np.array_equal(task.instrument, expected_labels)
    assert task.t_ref_days == 3.5
    p, k, e, w, lam = task.truth[0]
    assert (p, e, w) == (12.5, 0.25, 2.0)
    assert k == pytest.approx(raw["_k_ms"], rel=1e-12)
    assert lam == pytest.approx(7.0 - 2 * math.pi)
    assert np.allclose(task.truth_jitter_ms, [0.5, 0.25])
    inst_b = task.instrument == "inst_B"
    assert np.allclose(task.extra_var_ms2[inst_b], 0.25 ** 2 + 0.3 ** 2)
    assert np.allclose(task.extra_var_ms2[~inst_b], 0.5 ** 2 + 0.3 ** 2)


def test_oracle_passes_the_hand_written_file_in_both_modes(tmp_path):
    (tmp_path / "handmade.json").write_text(json.dumps(_hand_written()))
    suite = StargazerSuite()
    for mode in ("v1", "v2"):
        ep = suite.episode("handmade", tasks_from=str(tmp_path), mode=mode)
        result = ep.call("submit", ep.truth_submission())
        assert not result.is_error and result.data["passed"], (mode, result.text)


@pytest.mark.parametrize("seed", [3, 11])
def test_round_trip_our_task_through_the_published_format(seed):
    task = generate_task(seed)
    raw = json.loads(json.dumps(to_published(task)))
    back = task_from_published(raw, task.task_id)
    for name in ("times_days", "rv_ms", "err_ms", "extra_var_ms2", "truth_jitter_ms"):
        assert np.array_equal(getattr(back, name), getattr(task, name)), name
    assert np.array_equal(back.instrument, task.instrument)
    assert np.allclose(back.truth, task.truth, rtol=1e-12, atol=1e-12)
    assert back.star_mass_msun == task.star_mass_msun and back.tier == task.tier


def test_round_trip_of_a_task_with_activity_and_several_instruments():
    task = next(t for t in (bank_task(f"hard-{k:03d}") for k in range(40))
                if t.meta["activity"] is not None and len(t.labels) > 1)
    back = task_from_published(json.loads(json.dumps(to_published(task))), "x")
    assert np.array_equal(back.extra_var_ms2, task.extra_var_ms2)
    assert np.array_equal(back.instrument, task.instrument)
    assert np.allclose(back.truth, task.truth, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("meta", [{}, {"rv_semantics": "nbody"}])
def test_files_that_are_not_rv_only_are_refused(tmp_path, meta):
    raw = _hand_written()
    raw["meta"] = meta
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ImportRefused, match="rv_only"):
        load_published(path)
    with pytest.raises(ValueError, match="rv_only"):
        StargazerSuite().plan(tasks_from=str(tmp_path))


def test_broken_files_are_refused(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ImportRefused, match="not a readable JSON"):
        load_published(tmp_path / "bad.json")
    raw = _hand_written()
    raw["observations"]["rvs_ms"] = raw["observations"]["rvs_ms"][:-1]
    with pytest.raises(ImportRefused, match="length"):
        task_from_published(raw, "short")
    raw = _hand_written()
    del raw["config"]["planets"][0]["m_sin_i_mjup"]
    with pytest.raises(ImportRefused, match="m_sin_i_mjup"):
        task_from_published(raw, "nomass")


def test_cli_run_with_tasks_from(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "handmade.json").write_text(json.dumps(_hand_written()))
    (tasks / "ours.json").write_text(json.dumps(to_published(generate_task(3))))
    plan = StargazerSuite().plan(tasks_from=str(tasks))
    assert [s.task_id for s in plan] == ["handmade", "ours"]
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "stargazer", "--tasks-from", str(tasks),
                                      "--agent", "oracle", "--out", str(out),
                                      "--executor", "serial", "--quiet"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in records) == ["handmade", "ours"]
    assert all(r["passed"] and r["details"]["source"] == "imported" for r in records)
