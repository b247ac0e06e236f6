"""The mad suite from the command line: every baseline of every world is reachable by
name, `discoverygym run mad --world ...` plays it end to end and writes the suite's
summary (mean and median error and skill per law), and a baseline or an option of the
wrong world is refused with a clear message. Tiny worlds (short T_max, coarse grids)
keep it fast."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core import agent_table, get_suite, make_agent

BASELINES = {"classical": ("last-seen", "ballistic", "newtonian"),
             "fluid": ("persistence", "navier-stokes"),
             "quantum": ("uniform", "empirical", "schrodinger")}
TINY = {"classical": ["--t-max", "4", "--query-horizon", "2", "--n-particles", "3",
                      "--dim", "2"],
        "fluid": ["--resolution", "32", "--t-max", "2", "--query-horizon", "1"],
        "quantum": ["--t-max", "2", "--query-horizon", "1"]}


def test_every_baseline_is_registered_and_listed():
    table = agent_table("mad")
    for names in BASELINES.values():
        for name in names:
            assert name in table
            assert hasattr(make_agent("mad", name), "solve")
    listing = CliRunner().invoke(app, ["list"], env={"COLUMNS": "400"})
    assert listing.exit_code == 0
    mad_row = next(line for line in listing.output.splitlines() if "│ mad" in line)
    for names in BASELINES.values():
        for name in names:
            assert name in mad_row


@pytest.mark.parametrize("world,law", [("classical", "kappa10"), ("fluid", "normal"),
                                       ("quantum", "p3")])
def test_run_plays_every_baseline_of_a_world_end_to_end(tmp_path, world, law):
    for agent in BASELINES[world]:
        out = tmp_path / agent
        result = CliRunner().invoke(app, [
            "run", "mad", "--world", world, "--law", law, *TINY[world], "--seeds", "0-1",
            "--agent", agent, "--executor", "serial", "--quiet", "--out", str(out)],
            env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        # the printed table has the error and skill per task, not only pass rates
        assert "prediction error and skill per task" in result.output
        assert f"{world}-{law}" in result.output.split("skill per task", 1)[1]
        records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
        assert [r["seed"] for r in records] == [0, 1]
        assert all(r["error"] is None and r["value"] is not None for r in records), agent
        entry = json.loads((out / "summary.json").read_text())["suite_summary"]["per_task"][
            f"{world}-{law}"]
        errors = sorted(r["value"] for r in records)
        assert entry["mean_error"] == pytest.approx(sum(errors) / 2)
        assert entry["median_error"] == pytest.approx(sum(errors) / 2)
        skills = [r["details"]["skill"] for r in records]
        assert entry["mean_skill"] == pytest.approx(sum(skills) / 2)
        assert entry["n_missing"] == 0
        assert entry["skill_reference"].startswith(
            {"fluid": "nearest altered law"}.get(world, "normal physics"))


def test_a_baseline_of_another_world_fails_with_a_clear_message():
    suite = get_suite("mad")
    episode = suite.episode("fluid-normal", seed=0, resolution=32, t_max=2.0)
    with pytest.raises(RuntimeError, match="plays the classical world.*fluid world.*"
                                           "persistence, navier-stokes"):
        make_agent("mad", "newtonian").solve(episode.view())
    assert episode.usage.cost == 0 and not episode.done
    # through the runner the episode is recorded as a failure, never dropped
    record = episode.record(agent="newtonian")
    assert record.passed is False and record.value is None


def test_an_option_of_another_world_is_refused(tmp_path):
    result = CliRunner().invoke(app, [
        "run", "mad", "--world", "fluid", "--n-particles", "4", "--agent", "persistence",
        "--out", str(tmp_path / "x")], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "--n-particles" in result.output and "fluid world" in result.output
    assert not (tmp_path / "x").exists()


def test_fluid_and_quantum_baselines_play_every_icl_trial():
    suite = get_suite("mad")
    for task, agent, options in (
            ("fluid-normal", "persistence", {"resolution": 32, "t_max": 2.0,
                                              "query_horizon": 1.0}),
            ("quantum-normal", "uniform", {"t_max": 2.0, "query_horizon": 1.0})):
        episode = suite.episode(task, seed=0, variant="icl", trials=3, **options)
        make_agent("mad", agent).solve(episode.view())
        record = episode.record(agent=agent)
        assert record.value is not None and len(record.details["trial_errors"]) == 3
