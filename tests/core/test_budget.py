"""One budget type: every quantity an episode counts (observations, cost units,
submissions, solve time) is a `Budget` with a kind, a limit and what was spent; the
record states them in `usage.budget`; spending past a limit through a tool is refused
with a clear error that charges nothing; readers take records older than budgets and
records whose budgets are hostile."""

from __future__ import annotations

import json
import time

import pytest

from discoverygym.core import Budget, EpisodeRecord, ToolInputError, get_suite
from discoverygym.core.budget import read_budgets, without_clocks
from discoverygym.report.html import build_report
from discoverygym.run.leaderboard import leaderboard
from discoverygym.run.summary import summarize_records
from testpaths import REPO


def _budgets(episode) -> dict[str, dict]:
    """The record's budgets by kind, read back through JSON as a reader would."""
    record = json.loads(episode.record(agent="test").to_json())
    budgets = record["usage"]["budget"]
    assert [b["kind"] for b in budgets] == list(dict.fromkeys(b["kind"] for b in budgets))
    for budget in budgets:  # the totals every reader knows are the budgets' spent
        if budget["kind"] in ("observations", "cost", "submissions"):
            assert record["usage"][budget["kind"]] == budget["spent"]
    return {b["kind"]: b for b in budgets}


# ---- the type ---------------------------------------------------------------------------
def test_a_charge_past_the_limit_is_refused_and_charges_nothing():
    budget = Budget("observations", 10)
    budget.charge(7)
    with pytest.raises(ToolInputError, match="would use 4 observations but only 3 of 10 "
                                             "remain. Nothing was charged"):
        budget.charge(4)
    assert budget.spent == 7 and budget.remaining == 3
    budget.charge(3)
    assert budget.as_record() == {"kind": "observations", "limit": 10, "spent": 10}


def test_a_renewed_limit_applies_to_each_grant_and_spent_totals_them():
    budget = Budget("cost", 30.0, renewals=0)
    budget.charge(25.0)
    with pytest.raises(ToolInputError, match="cost units"):
        budget.charge(10.0)
    budget.renew()
    assert budget.remaining == 30.0
    budget.charge(30.0)
    assert budget.as_record() == {"kind": "cost", "limit": 30.0, "spent": 55.0, "renewals": 1}
    with pytest.raises(ValueError, match="does not renew"):
        Budget("observations", 5).renew()


def test_a_clock_runs_past_its_limit_and_is_left_out_of_comparisons():
    clock = Budget("solve_s", 1.0)
    clock.elapse(2.5)
    assert clock.spent == 2.5 and clock.remaining == -1.5
    assert without_clocks([clock.as_record(), Budget("submissions").as_record()]) == [
        {"kind": "solve_s", "limit": 1.0}, {"kind": "submissions", "limit": None, "spent": 0}]


def test_an_episode_counts_a_kind_once():
    episode = get_suite("tpbench").episode("atwood-disk-pulley")
    with pytest.raises(ValueError, match="already counts submissions"):
        episode._add_budget(Budget("submissions", 2))


# ---- each suite's record states its budgets ------------------------------------------------
def test_gravity_states_its_observation_limit_so_no_reader_parses_the_protocol():
    episode = get_suite("gravity").episode("period", world="A", protocol="budget-obs-7")
    view = episode.view()
    assert not view.call("observe", {"times": [0.0, 1.0, 2.0]}).is_error
    assert view.workspace()["budget"] == {"total": 7, "per_call": 10, "used": 3,
                                          "remaining": 4}
    refused = view.call("observe", {"times": [3.0, 4.0, 5.0, 6.0, 7.0]})
    assert refused.is_error and "would use 5 observations but only 4 of 7 remain" in \
        refused.text and "Nothing was charged" in refused.text
    assert episode.usage.observations == 3 and episode.budget_left() == 4 and not view.done
    view.call("submit", {"answer": 1.0})
    assert _budgets(episode) == {
        "observations": {"kind": "observations", "limit": 7, "spent": 3},
        "submissions": {"kind": "submissions", "limit": 1, "spent": 1}}


def test_gravity_full_observation_has_no_observation_budget():
    episode = get_suite("gravity").episode("period", world="A", protocol="full-obs")
    episode.view().call("submit", {"answer": 1.0})
    assert _budgets(episode) == {"submissions": {"kind": "submissions", "limit": 1,
                                                 "spent": 1}}


def test_stargazer_counts_valid_submissions_against_its_limit():
    episode = get_suite("stargazer").episode("easy-000")
    view = episode.view()
    planet = {"P_days": 10.0, "K_ms": 5.0, "e": 0.1, "omega_rad": 1.0, "l_rad": 2.0}
    assert view.call("submit", {"planets": [{**planet, "e": 1.5}]}).is_error  # free
    for _ in range(3):
        assert not view.call("submit", {"planets": [planet]}).is_error
    assert view.done  # the third of three ends the episode
    refused = view.call("submit", {"planets": [planet]})
    assert refused.is_error and episode.usage.submissions == 3
    assert _budgets(episode) == {"submissions": {"kind": "submissions", "limit": 3,
                                                 "spent": 3}}


def test_stargazer_refuses_a_submission_past_its_limit_while_the_episode_runs():
    episode = get_suite("stargazer").episode("easy-000")
    episode._budget.charge(3)  # as if three were spent, without ending the episode
    result = episode.view().call("submit", {"planets": [
        {"P_days": 10.0, "K_ms": 5.0, "e": 0.1, "omega_rad": 1.0, "l_rad": 2.0}]})
    assert result.is_error and "No submissions left (limit 3). Nothing was charged" in \
        result.text
    assert episode.usage.submissions == 3 and not episode.done


def test_tpbench_states_its_one_submission():
    episode = get_suite("tpbench").episode("atwood-disk-pulley")
    view = episode.view()
    assert view.call("submit", {"solution": "  "}).is_error  # an empty solution is free
    view.call("submit", {"solution": "```python\ndef f():\n    return 0\n```"})
    budgets = _budgets(episode)
    assert budgets == {"submissions": {"kind": "submissions", "limit": 1, "spent": 1}}


def test_mad_states_cost_per_run_observed_items_and_answers():
    episode = get_suite("mad").episode("classical-normal", protocol="paper", t_max=2.0,
                                       query_horizon=1.0)
    view = episode.view()
    for step in range(19):  # 19 high-fidelity items: 190 of 200 cost units
        assert not view.call("measure", {"t": 0.1 * step, "what": [0],
                                         "fidelity": "high"}).is_error
    refused = view.call("measure", {"t": 1.9, "what": [0, 1], "fidelity": "high"})
    assert refused.is_error and "would use 20 cost units but only 10 of 200 remain" in \
        refused.text and "Nothing was charged" in refused.text
    assert episode.usage.cost == 190.0 and episode.usage.observations == 19
    assert _budgets(episode) == {
        "cost": {"kind": "cost", "limit": 200.0, "spent": 190.0, "renewals": 0},
        "observations": {"kind": "observations", "limit": None, "spent": 19},
        "submissions": {"kind": "submissions", "limit": 1, "spent": 0}}


@pytest.mark.slow  # the quantum world's measurements take seconds each
def test_mad_renews_the_cost_limit_with_each_measurement_run():
    episode = get_suite("mad").episode("quantum-normal", protocol="paper", t_max=0.5,
                                       query_horizon=0.25)
    view = episode.view()
    limit = episode._budget.limit
    assert not view.call("measure", {"t": 0.1, "what": 1, "fidelity": "high"}).is_error
    assert not view.call("restart_measurements", {}).is_error
    assert episode.budget_left() == limit
    assert not view.call("measure", {"t": 0.1, "what": 2, "fidelity": "high"}).is_error
    # read from the live usage: scoring this world's record is slow, and adds nothing here
    cost = episode.usage.budget[0]
    assert cost == {"kind": "cost", "limit": limit, "spent": 20.0, "renewals": 1}
    assert episode.usage.cost == 20.0


def test_packages_states_its_solve_time_and_refuses_work_once_it_is_spent():
    episode = get_suite("packages").episode("gravity-force-law", time_limit_s=0.05)
    time.sleep(0.1)
    refused = episode.view().call("evaluate", {})
    assert refused.is_error and "solve time is used up" in refused.text
    assert episode.usage.submissions == 0  # nothing was charged
    budgets = _budgets(episode)
    assert budgets["submissions"] == {"kind": "submissions", "limit": None, "spent": 0}
    solve = budgets["solve_s"]
    assert solve["limit"] == 0.05 and 0.1 <= solve["spent"] < 60


# ---- readers ----------------------------------------------------------------------------
def _record(**usage) -> dict:
    return {"suite": "gravity", "task_id": "period", "seed": 0, "options": {}, "agent": "a",
            "model": None, "answer": 1.0, "truth": 2.0, "passed": False, "score": 0.0,
            "metric": "relative_error", "value": 0.5, "threshold": 0.05, "error": None,
            "world": "A", "protocol": "budget-obs-100", "details": {}, "version": "0",
            "schema_version": 1,
            "usage": {"observations": 3, "cost": 0, "submissions": 1, "tool_calls": 2,
                      "wall_s": 0.1, **usage}}


_DEEP: object = 0
for _ in range(10_000):
    _DEEP = {"kind": "observations", "spent": 1, "limit": _DEEP}

HOSTILE_BUDGETS = {
    "not a list": "observations: lots",
    "huge numbers": [{"kind": "observations", "limit": 10**400, "spent": 10**400},
                     {"kind": "cost", "limit": 1e308, "spent": 1e308},
                     {"kind": "cost", "limit": 1e308, "spent": 1e308}],
    "wrong types": [None, 3, "x", [], {"kind": 7, "spent": 1},
                    {"kind": "observations", "limit": "100", "spent": True},
                    {"kind": "observations", "limit": [], "spent": "3"}],
    "deep nesting": [_DEEP],
    "long kind": [{"kind": "<b>[red]x" + "y" * 10_000_000, "limit": 1, "spent": 1}],
    "many entries": [{"kind": "observations", "limit": 1, "spent": 1}] * 100_000,
}


def test_a_record_older_than_budgets_still_reads():
    old = _record()
    assert read_budgets(old["usage"]) == []
    assert EpisodeRecord.from_dict(old).usage.budget == []
    summary = summarize_records([old])
    assert summary["budgets"] == {} and summary["mean_usage"]["observations"] == 3


@pytest.mark.parametrize("case", sorted(HOSTILE_BUDGETS))
def test_hostile_budgets_read_as_bounded_inert_values(case):
    usage = {"budget": HOSTILE_BUDGETS[case]}
    budgets = read_budgets(usage)
    assert len(budgets) <= 16
    for budget in budgets:
        assert isinstance(budget["kind"], str) and len(budget["kind"]) <= 40
        assert budget["limit"] is None or isinstance(budget["limit"], float)
        assert isinstance(budget["spent"], float)
    summary = summarize_records([_record(budget=HOSTILE_BUDGETS[case])] * 2)
    json.dumps(summary, allow_nan=False)  # strict JSON: no Infinity from 1e308 + 1e308


def test_readers_take_old_new_and_hostile_records(tmp_path):
    """The run's real readers (summary, leaderboard, HTML report) over one run holding
    a record older than budgets, a new one, and the hostile ones (the deep one is
    written as JSON nested past what the readers parse)."""
    run = tmp_path / "run"
    run.mkdir()
    new = _record(budget=[{"kind": "observations", "limit": 100, "spent": 3},
                          {"kind": "submissions", "limit": 1, "spent": 1}])
    records = [_record(), new] + [_record(budget=v) for k, v in sorted(HOSTILE_BUDGETS.items())
                                  if k != "deep nesting"]
    lines = [json.dumps(r) for r in records]
    lines.append(json.dumps(_record(budget=[0]))[:-3] + "[" * 10_000 + "]" * 10_000 + "]}}")
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    summary = summarize_records(records)
    (run / "summary.json").write_text(json.dumps(summary))
    assert 100 in summary["budgets"]["observations"]["limits"]
    rows = leaderboard([str(run)], by=["suite"])
    assert rows and rows[0]["n"] >= len(records)
    html = build_report(run)
    assert "3/100 observations, 1/1 submissions" in html
    assert "<b>[red]x" not in html  # a hostile kind is escaped


def test_spending_past_the_limit_through_the_gym_door_is_refused_and_recorded():
    """The attack through a door an RL agent holds: observe past the budget with
    env.step. Refused, nothing charged, and the final record states the budget."""
    import discoverygym.doors.gym as dg_gym

    env = dg_gym.DiscoveryEnv("gravity", task_id="period", world="A", protocol="budget-obs-3")
    env.reset(seed=0)
    observe, submit = env.tool_names.index("observe"), env.tool_names.index("submit")
    obs, *_ = env.step({"tool": observe, "args": json.dumps({"times": [0.0, 1.0, 2.0]})})
    assert obs["is_error"] == 0 and obs["budget_left"][0] == 0
    obs, _, terminated, _, _ = env.step({"tool": observe, "args": '{"times": [3.0]}'})
    assert obs["is_error"] == 1 and "Nothing was charged" in obs["text"] and not terminated
    assert obs["budget_left"][0] == 0
    *_, info = env.step({"tool": submit, "args": '{"answer": 1.0}'})
    assert info["record"]["usage"]["budget"] == [
        {"kind": "observations", "limit": 3, "spent": 3},
        {"kind": "submissions", "limit": 1, "spent": 1}]


def test_the_docs_example_is_the_first_golden_record():
    """The usage example of docs/running.md is the first golden record's, value for value."""

    root = REPO
    readme = (root / "docs" / "running.md").read_text()
    section = readme[readme.index("## Budgets: what an episode was allowed"):]
    block = section[section.index("```json") + len("```json"):]
    shown = json.loads(block[:block.index("```")])
    golden = json.loads((root / "tests" / "data" / "golden_records.json").read_text())[0]
    assert shown == golden["usage"]
