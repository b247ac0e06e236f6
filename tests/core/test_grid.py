"""The grid: a suite's plan is cases (task, options) without seeds, and one `--seeds`
(core.seeds), owned by the runner, crosses them for every suite and every tool that
plans episodes: run, calibrate, audit, the verifiers splits, the Harbor export."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym import audit as audit_module
from discoverygym.cli import app
from discoverygym.core import Case, EpisodeSpec, agent_table, cross, get_suite
from discoverygym.core.audit_registry import AttackFamily, Outcome
from discoverygym.core.conformance import check_plan
from discoverygym.core.keys import new_key

toy_suite.install()
SUITES = ("gravity", "stargazer", "mad", "tpbench", "packages")
#: Today's default plans (before the grid) had these many episodes; they must not change.
DEFAULT_EPISODES = {"gravity": 206, "stargazer": 120, "mad": 60, "tpbench": 84, "packages": 6}


def _dry_run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", *args, "--dry-run"], env={"COLUMNS": "300"})
    return result.exit_code, " ".join(result.output.split())


def _planned(output: str) -> int:
    match = re.search(r"dry run: (\d+) episodes", output)
    assert match, output
    return int(match.group(1))


@pytest.mark.parametrize("suite", SUITES)
def test_every_suite_plans_cases_and_the_runner_crosses_its_seeds(suite):
    s = get_suite(suite)
    cases = s.plan()
    assert cases and all(isinstance(c, Case) for c in cases)
    assert not check_plan(s)
    agent = next(iter(agent_table(suite)))
    code, default = _dry_run(suite, "--agent", agent)
    assert code == 0, default
    assert _planned(default) == DEFAULT_EPISODES[suite] == len(cases) * len(s.default_seeds)
    code, three = _dry_run(suite, "--agent", agent, "--seeds", "4-5,9")
    assert code == 0, three
    assert _planned(three) == len(cases) * 3 and "seeds 4,5,9" in three
    assert {spec.seed for spec in s.episodes([4, 5, 9])} == {4, 5, 9}


def test_mad_plays_its_ten_seeds_and_the_others_one_by_default():
    assert get_suite("mad").default_seeds == tuple(range(10))
    assert {get_suite(s).default_seeds for s in SUITES if s != "mad"} == {(0,)}


@pytest.mark.parametrize("suite, retired", [("tpbench", "--attempts"), ("gravity", "--attempts")])
def test_attempts_is_gone_with_one_line_that_suggests_seeds(suite, retired):
    code, output = _dry_run(suite, "--agent", next(iter(agent_table(suite))), retired, "3")
    assert code == 1 and "Traceback" not in output
    assert "--attempts is gone" in output and "--seeds 0-" in output


def test_mad_has_no_seed_option_of_its_own():
    assert "seeds" not in {o.name for o in get_suite("mad").run_options}
    code, output = _dry_run("mad", "--agent", "newtonian", "--seeds", "0..3")
    assert code == 1 and "bad --seeds" in output  # the runner's parser, one line


def test_cross_gives_each_case_every_seed_once_and_the_key():
    key = new_key()
    cases = [Case("a", {"x": 1}), Case("b"), Case("a", {"x": 1})]
    specs = cross("toy", cases, [3, 1, 3], key=key)
    assert [(s.task_id, s.seed) for s in specs] == [("a", 3), ("a", 1), ("b", 3), ("b", 1)]
    assert all(s.key is key for s in specs)
    for bad in ([-1], [True], ["0"], []):
        with pytest.raises(ValueError):
            cross("toy", cases, bad)
    with pytest.raises(TypeError, match="not a Case"):
        cross("toy", [EpisodeSpec("toy", "guess", 0)], [0])


def test_conformance_finds_a_plan_that_carries_seeds():
    class SeedsInThePlan(toy_suite.ToySuite):
        def plan(self, **options):
            return [EpisodeSpec("toy", "guess", s, {"budget": 10}) for s in range(3)]

    class AttemptsOption(toy_suite.ToySuite):
        def plan(self, **options):
            return [Case("guess", {"budget": 10, "attempts": 3})]

    assert "not a Case" in str(check_plan(SeedsInThePlan()))
    assert "attempts" in str(check_plan(AttemptsOption()))


def test_calibrate_plays_the_runners_seeds(tmp_path):
    result = CliRunner().invoke(app, ["calibrate", "toy", "--seeds", "2,7", "--dry-run"])
    assert result.exit_code == 0, result.output
    # one case, two seeds, for each calibration agent
    assert "dry run: 2 episodes of 1 tasks" in " ".join(result.output.split())
    from discoverygym.calibrate import calibrate

    done = calibrate("toy", seeds=[2, 7], runs_dir=tmp_path, executor="serial")
    assert "--seeds 2,7" in done.command
    for run_dir in done.run_dirs.values():
        seeds = [json.loads(line)["seed"] for line in (run_dir / "records.jsonl").open()]
        assert sorted(seeds) == [2, 7]


def test_audit_plays_its_case_on_the_runners_seeds(monkeypatch):
    seen = []

    def note_the_episode(target):
        spec = target.episode_spec()
        seen.append((spec.task_id, spec.seed))
        return [Outcome("grid", "look", "an episode", str(spec.seed), True)]

    monkeypatch.setattr(audit_module, "families",
                        lambda target: [AttackFamily("grid", "note", note_the_episode)])
    assert audit_module.audit("toy") and seen == [("guess", 0)]
    seen.clear()
    outcomes = audit_module.audit("toy", seeds=[3, 8])
    assert seen == [("guess", 3), ("guess", 8)]
    assert [o.attack for o in outcomes] == ["look (seed 3)", "look (seed 8)"]
    result = CliRunner().invoke(app, ["audit", "toy", "--seeds", "5", "--json"])
    assert result.exit_code == 0, result.output
    assert seen[-1] == ("guess", 5)
    bad = CliRunner().invoke(app, ["audit", "toy", "--seeds", "x"])
    assert bad.exit_code == 1 and "bad --seeds" in bad.output


def test_the_verifiers_eval_split_plays_the_runners_seeds_held_out(tmp_path, monkeypatch):
    from discoverygym.doors.verifiers.selection import EVAL_SEED_START, split_specs

    monkeypatch.setenv("DISCOVERYGYM_KEY", new_key().hex())
    specs = list(split_specs("toy", "eval", {}, "0-2"))
    assert [s.seed for s in specs] == [EVAL_SEED_START + k for k in range(3)]
    assert all(s.key is not None for s in specs)  # the key enters with the seeds
    assert [s.seed for s in split_specs("toy", "eval", {})] == [EVAL_SEED_START]
    with pytest.raises(ValueError, match="bad --seeds"):
        split_specs("toy", "eval", {}, "0..2")
    with pytest.raises(ValueError, match="train split"):
        split_specs("toy", "train", {}, "0-2")
    with pytest.raises(ValueError, match="eval seeds run"):
        split_specs("toy", "eval", {}, str(EVAL_SEED_START))


def test_the_harbor_export_plays_the_runners_seeds(tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["export", "harbor", "toy", str(out), "--seeds", "5,9"])
    assert result.exit_code == 0, result.output
    index = json.loads((out / "discoverygym-index.json").read_text())["tasks"]
    assert sorted(entry["seed"] for entry in index.values()) == [5, 9]
    bad = CliRunner().invoke(app, ["export", "harbor", "toy", str(tmp_path / "x"), "--seeds",
                                   "-1"])
    assert bad.exit_code == 1 and "bad --seeds" in bad.output


def test_the_inspect_task_takes_the_runners_seeds():
    pytest.importorskip("inspect_ai")
    from discoverygym.doors.inspect.task import suite_task

    def seeds_of(task):
        return [sample.metadata["episode"]["seed"] for sample in task.dataset]

    assert seeds_of(suite_task("toy", seeds="2-3")) == [2, 3]
    assert seeds_of(suite_task("toy", seeds=5)) == [5]  # -T seeds=5 arrives as a number
    assert seeds_of(suite_task("toy")) == list(get_suite("toy").default_seeds)
    with pytest.raises(ValueError, match="bad --seeds"):
        suite_task("toy", seeds="two")
