"""`discoverygym calibrate`: seeds, the verdict rules, and whole runs on the toy suite
(a plugin that declares its CALIBRATION through register_agents)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym.calibrate import (
    LEAKS,
    TOO_HARD,
    VALID,
    WEAK,
    AgentRate,
    calibrate,
    calibration_specs,
    command_line,
    verdict,
)
from discoverygym.cli import app
from discoverygym.core import UnknownName, calibration_table, register_agents, register_suite
from discoverygym.core.seeds import parse_seeds

toy_suite.install()
runner = CliRunner()


def test_seeds_ranges_lists_and_bad_input():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("7") == [7]
    assert parse_seeds("3,0-1,3") == [0, 1, 3]
    for bad in ("", "a", "5-2", "-1", "0-99999", "0..3", "x" * 10_000):
        with pytest.raises(ValueError) as err:
            parse_seeds(bad)
        assert "\n" not in str(err.value) and len(str(err.value)) < 200


ROLES = {"oracle": ["o1", "o2"], "baselines": ["b"], "no_science": ["n"],
         "trivial": ["t1", "t2"]}


def rates(**passed: int) -> dict[str, AgentRate]:
    return {agent: AgentRate(n=10, passed=k) for agent, k in passed.items()}


@pytest.mark.parametrize("counts, chance, expected", [
    ({"o1": 10, "b": 0, "n": 0, "t1": 0, "t2": 2}, 0.0, VALID),  # 20 % is not above 20 %
    ({"o1": 5, "o2": 8, "n": 2, "t1": 0, "t2": 0}, 0.0, VALID),  # the best oracle counts
    ({"o1": 7, "o2": 7, "t1": 0, "t2": 0}, 0.0, TOO_HARD),
    ({"o1": 10, "t1": 0, "t2": 3}, 0.0, LEAKS),
    ({"o1": 2, "t1": 3}, 0.0, LEAKS),  # a leak is reported before the oracle's failure
    ({"o1": 10, "n": 3, "t1": 0}, 0.0, WEAK),
    ({"o1": 10, "b": 10, "t1": 0}, 0.0, VALID),  # an honest baseline may pass
    ({"o1": 10, "t1": 5, "t2": 7}, 0.5, VALID),  # a yes/no task: up to 70 % is chance
    ({"o1": 10, "t1": 8}, 0.5, LEAKS),
])
def test_verdict_rules(counts, chance, expected):
    label, reason = verdict(rates(**counts), ROLES, chance)
    assert label == expected
    assert bool(reason) == (label != VALID)


def test_a_leak_on_one_episode_of_a_yes_no_task_says_one_seed_is_too_few():
    one = {"o1": AgentRate(n=1, passed=1), "t1": AgentRate(n=1, passed=1)}
    label, reason = verdict(one, ROLES, 0.5)
    assert label == LEAKS and "too few" in reason and "seeds" in reason
    label, reason = verdict(rates(o1=10, t1=9), ROLES, 0.5)  # ten episodes: a real leak
    assert label == LEAKS and "too few" not in reason


def test_the_command_line_reproduces_the_table_in_a_shell():
    assert command_line("gravity", [0, 1, 2], "mass_*", {"setup": "published"}) == \
        "discoverygym calibrate gravity --seeds 0-2 --tasks 'mass_*' --setup published"
    assert command_line("toy", [0, 4], None, {}) == "discoverygym calibrate toy --seeds 0,4"


def test_every_planned_episode_is_played_once_per_seed_and_tasks_filter():
    specs = calibration_specs("toy", [0, 5, 9])
    assert [(s.task_id, s.seed) for s in specs] == [("guess", 0), ("guess", 5), ("guess", 9)]
    assert all(s.options == {"budget": 10} for s in specs)
    assert calibration_specs("toy", [1], tasks="gu*")[0].task_id == "guess"
    with pytest.raises(UnknownName, match="matches no task"):
        calibration_specs("toy", [1], tasks="nothing")


def test_toy_calibration_is_valid_and_writes_markdown_and_json(tmp_path):
    table = tmp_path / "toy.md"
    result = runner.invoke(app, ["calibrate", "toy", "--seeds", "0-3", "--executor", "serial",
                                 "--runs", str(tmp_path / "runs"), "--out", str(table),
                                 "--quiet"])
    assert result.exit_code == 0, result.output
    text = table.read_text()
    assert text.startswith("`discoverygym calibrate toy --seeds 0-3`")
    assert "| guess | 4/4 | 0/4 | 0/4 | valid |" in text
    # each agent has its own ordinary run directory
    for agent in ("bisect", "midpoint", "give-up"):
        lines = (tmp_path / "runs" / agent / "records.jsonl").read_text().splitlines()
        assert sorted(json.loads(line)["seed"] for line in lines) == [0, 1, 2, 3]

    as_json = runner.invoke(app, ["calibrate", "toy", "--seeds", "0-3", "--executor", "serial",
                                  "--runs", str(tmp_path / "runs"), "--resume", "--json",
                                  "--out", str(tmp_path / "toy.json")])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data == {**json.loads((tmp_path / "toy.json").read_text()),
                    "elapsed_s": data["elapsed_s"]}
    (task,) = data["tasks"]
    assert task["verdict"] == "valid"
    # resumed on fewer seeds, the table counts only the episodes of this plan
    fewer = runner.invoke(app, ["calibrate", "toy", "--seeds", "1", "--executor", "serial",
                                "--runs", str(tmp_path / "runs"), "--resume", "--json"])
    assert json.loads(fewer.output)["tasks"][0]["agents"]["bisect"]["n"] == 1
    assert task["agents"]["bisect"]["pass_rate"] == 1.0
    assert task["agents"]["bisect"]["median_value"] < 1.0  # the metric: |error| <= 1
    assert task["agents"]["give-up"]["passed"] == 0


def test_a_run_directory_is_not_overwritten_without_resume(tmp_path):
    args = ["calibrate", "toy", "--seeds", "0", "--executor", "serial",
            "--runs", str(tmp_path), "--quiet"]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "--resume" in again.output


def test_a_trivial_agent_that_passes_is_a_leak_and_the_command_fails(tmp_path):
    """The toy suite with its oracle declared as a trivial agent: bisection passes
    without being told anything extra, which is what a leak looks like to calibrate."""
    register_agents("toy", {}, calibration={"oracle": ["bisect"], "trivial": ["slow-bisect"]})
    try:
        result = runner.invoke(app, ["calibrate", "toy", "--seeds", "0-1", "--executor",
                                     "serial", "--runs", str(tmp_path), "--json",
                                     "--out", str(tmp_path / "t.md")])
    finally:
        register_agents("toy", {}, calibration=toy_suite.CALIBRATION)
    assert result.exit_code == 1, result.output
    (task,) = json.loads(result.output)["tasks"]
    assert task["verdict"] == "leaks" and "slow-bisect 100%" in task["reason"]
    assert "- `guess`: leaks (trivial above 20%: slow-bisect 100%)" in \
        (tmp_path / "t.md").read_text()


def test_the_process_executor_plays_the_same_table(tmp_path):
    result = calibrate("toy", seeds=[0, 1], runs_dir=tmp_path, executor="process", workers=2)
    serial = calibrate("toy", seeds=[0, 1], runs_dir=tmp_path / "serial", executor="serial")
    assert [(t.verdict, {a: r.passed for a, r in t.rates.items()}) for t in result.tasks] == \
        [(t.verdict, {a: r.passed for a, r in t.rates.items()}) for t in serial.tasks]
    assert result.tasks[0].rates["bisect"].passed == 2


def test_suites_without_a_calibration_or_with_unknown_agents_are_refused(tmp_path):
    register_suite("toy-bare", "toy_suite:ToySuite")
    assert calibration_table("toy-bare") is None
    result = runner.invoke(app, ["calibrate", "toy-bare", "--runs", str(tmp_path)])
    assert result.exit_code == 1 and "declares no CALIBRATION" in " ".join(result.output.split())
    register_agents("toy-typo", {}, calibration={"oracle": ["bisekt"]})
    register_suite("toy-typo", "toy_suite:ToySuite")
    result = runner.invoke(app, ["calibrate", "toy-typo", "--runs", str(tmp_path)])
    assert result.exit_code == 1 and "no such agent" in " ".join(result.output.split())
    result = runner.invoke(app, ["calibrate", "toy", "--seeds", "x", "--runs", str(tmp_path)])
    assert result.exit_code == 1 and "bad --seeds" in result.output
    assert "0-9" in result.output  # the accepted forms are named
