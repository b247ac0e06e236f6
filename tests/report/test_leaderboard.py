"""The DuckDB leaderboard over several runs agrees with a hand computation."""

from __future__ import annotations

import json
import math

import pytest

from discoverygym.run.leaderboard import broken_lines, check_keys, format_rows, leaderboard


def _rec(agent, passed, tier, obs, usd=0.0):
    return {"suite": "s", "task_id": "t", "seed": 0, "options": {"tier": tier}, "agent": agent,
            "model": None, "passed": passed, "score": float(passed), "details": {},
            "usage": {"observations": obs, "tool_calls": 1, "input_tokens": 10,
                      "output_tokens": 5, "usd": usd, "wall_s": 0.1}}


@pytest.fixture()
def runs(tmp_path):
    data = {
        "run1": [_rec("a", True, "easy", 10), _rec("a", False, "easy", 20),
                 _rec("a", True, "hard", 30)],
        "run2": [_rec("b", True, "easy", 5, 0.5), _rec("b", True, "hard", 5, 0.25)],
        "run3": [_rec("a", False, "hard", 40), _rec("b", False, "hard", 1, 0.25)],
    }
    for name, recs in data.items():
        d = tmp_path / name
        d.mkdir()
        (d / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return tmp_path


def test_by_agent_matches_hand_computation(runs):
    rows = {r["agent"]: r for r in leaderboard([str(runs / "run*")], ["agent"])}
    a, b = rows["a"], rows["b"]
    assert (a["n"], a["n_passed"]) == (4, 2) and a["pass_rate"] == pytest.approx(0.5)
    assert a["pass_rate_se"] == pytest.approx(math.sqrt(0.25 / 4))
    assert a["mean_observations"] == pytest.approx(25.0)
    assert (b["n"], b["n_passed"]) == (3, 2)
    assert b["pass_rate_se"] == pytest.approx(math.sqrt((2 / 3) * (1 / 3) / 3))
    assert b["total_usd"] == pytest.approx(1.0) and b["mean_tokens"] == pytest.approx(15)


def test_group_by_an_option_and_by_run(runs):
    rows = leaderboard([str(runs / "run1"), str(runs / "run3")], ["agent", "tier"])
    got = {(r["agent"], r["tier"]): (r["n"], r["n_passed"]) for r in rows}
    assert got == {("a", "easy"): (2, 1), ("a", "hard"): (2, 1), ("b", "hard"): (1, 0)}
    per_run = {r["run"].rsplit("/", 1)[-1]: r["n"] for r in leaderboard([str(runs / "*")], ["run"])}
    assert per_run == {"run1": 3, "run2": 2, "run3": 2}


def test_formats_and_errors(runs, tmp_path):
    rows = leaderboard([str(runs / "run2")], ["agent"])
    assert format_rows(rows, "csv").splitlines()[0].startswith("agent,n,n_passed")
    assert "| agent |" in format_rows(rows, "markdown")
    assert json.loads(format_rows(rows, "json"))[0]["n"] == 2
    with pytest.raises(FileNotFoundError):
        leaderboard([str(tmp_path / "nothing-here")], ["agent"])
    with pytest.raises(ValueError):
        leaderboard([str(runs / "run2")], ["agent; drop table"])


def _mad(protocol, variant, passed, *, old_style):
    """A mad record; `old_style`: as written before issue 36 (the variant at the top)."""
    return {"suite": "mad", "task_id": "classical-kappa20", "seed": 0, "agent": "newtonian",
            "model": None, "options": {"protocol": protocol}, "passed": passed,
            "score": float(passed), "protocol": variant if old_style else protocol,
            "details": {"variant": variant}, "usage": {}}


@pytest.mark.parametrize("old_style", [False, True])
def test_by_protocol_keeps_paper_and_discovery_apart(tmp_path, old_style):
    (tmp_path / "records.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in (_mad("paper", "predict", True, old_style=old_style),
                                       _mad("discovery", "predict", False,
                                            old_style=old_style))))
    rows = leaderboard([str(tmp_path)], ["suite", "agent", "protocol"])
    assert {r["protocol"]: r["n"] for r in rows} == {"paper": 1, "discovery": 1}
    assert {r["variant"]: r["n"] for r in leaderboard([str(tmp_path)], ["variant"])} == \
        {"predict": 2}


def test_a_group_key_no_record_has_is_refused_with_a_suggestion(runs):
    check_keys([str(runs / "*")], ["suite", "agent", "tier"])  # tier is an option: fine
    with pytest.raises(ValueError, match="Did you mean agent"):
        check_keys([str(runs / "*")], ["suite", "agnet"])
    with pytest.raises(ValueError, match="Did you mean tier"):
        check_keys([str(runs / "*")], ["tiers"])


def test_unreadable_lines_are_counted(runs):
    assert broken_lines([str(runs / "*")]) == 0
    with (runs / "run1" / "records.jsonl").open("a") as fh:
        fh.write("not json\n[1, 2]\n\n{\"torn\": ")
    assert broken_lines([str(runs / "*")]) == 3
    # The figures are unchanged: the three lines are no records.
    assert {r["agent"]: r["n"] for r in leaderboard([str(runs / "*")], ["agent"])} == \
        {"a": 4, "b": 3}


def test_command_refuses_a_typo_and_says_what_it_skipped(runs):
    from typer.testing import CliRunner

    from discoverygym.cli import app

    typo = CliRunner().invoke(app, ["leaderboard", str(runs / "*"), "--by", "suite,agnet"])
    assert typo.exit_code == 1 and "Did you mean agent?" in typo.output
    with (runs / "run2" / "records.jsonl").open("a") as fh:
        fh.write("not json\n")
    table = CliRunner().invoke(app, ["leaderboard", str(runs / "*"), "--by", "agent"])
    assert table.exit_code == 0 and "skipped 1 unreadable line" in table.output
    csv = CliRunner().invoke(app, ["leaderboard", str(runs / "*"), "--by", "agent",
                                   "--format", "csv"])
    assert csv.exit_code == 0 and "skipped 1 unreadable line" in csv.output
