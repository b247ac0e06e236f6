"""The tpbench suite: every shipped problem checked (reference passes, every wrong
answer fails; the independent checks run in test_tpbench_check.py on a sample), scoring (avg@k, best@k, GPA) on constructed records, the episode's tools
and prompt, plans and options, the scripted agents through the runner, the check CLI."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app as main_app
from discoverygym.core import get_suite
from discoverygym.run import read_records, run_episodes
from discoverygym.suites.tpbench import TPBenchSuite, parse_levels
from discoverygym.suites.tpbench.check import check_problems
from discoverygym.suites.tpbench.problem import DOMAINS, builtin_problem_dir, load_problems
from discoverygym.suites.tpbench.scoring import (
    grade_points,
    holistic_grade,
    per_problem,
    summarize_attempts,
)

PROBLEMS = load_problems(builtin_problem_dir())


# Every third problem (by id) with its reference and every wrong answer through the real
# verifier: the whole set is `discoverygym tpbench check --strict` (README figures);
# the independent checks (up to ~10 s each) run on a sample in test_tpbench_check.py.
SAMPLE = {p.id for i, p in enumerate(sorted(PROBLEMS, key=lambda p: p.id)) if i % 3 == 0}


@pytest.fixture(scope="module")
def report():
    return check_problems(builtin_problem_dir(), independent=False, only=SAMPLE)


# ---- the shipped problem set -------------------------------------------------------------
def test_sampled_references_pass_and_their_wrong_answers_fail(report):
    assert len(PROBLEMS) >= 80 and len(report["problems"]) == len(SAMPLE) >= 25
    bad = {p["id"]: p["problems"] for p in report["problems"] if not p["ok"]}
    assert not bad
    for entry in report["problems"]:
        assert entry["reference_verdict"] == "correct", entry["id"]
        assert entry["wrong_answers"], entry["id"]
        for wrong in entry["wrong_answers"]:
            assert wrong["verdict"] in ("wrong", "error"), (entry["id"], wrong)
        assert entry["n_tests"] >= 8, entry["id"]


def test_problem_set_spans_levels_and_domains():
    assert all(p.wrong_answers and p.independent_check for p in PROBLEMS)
    assert {p.domain for p in PROBLEMS} == set(DOMAINS)
    levels = Counter(p.level for p in PROBLEMS)
    assert set(levels) == {1, 2, 3, 4, 5}
    assert len({p.id for p in PROBLEMS}) == len(PROBLEMS)


# ---- scoring -------------------------------------------------------------------------------
def rec(task, passed, level, domain="cosmology", verdict=None):
    return {"task_id": task, "passed": passed,
            "details": {"level": level, "domain": domain, "problem_version": 1,
                        "verdict": verdict or ("correct" if passed else "wrong")}}


def test_grade_points_follow_the_published_table_for_k5():
    table = {5: "A", 4: "A", 3: "B", 2: "B", 1: "C", 0: "F"}
    for correct, letter in table.items():
        assert grade_points(correct, 5)[0] == letter
    assert [grade_points(c, 5)[1] for c in range(6)] == [0, 2, 3, 3, 4, 4]
    # other k: the same fractions (documented in scoring.py and the README)
    assert [grade_points(c, 1)[0] for c in (0, 1)] == ["F", "A"]
    assert [grade_points(c, 10)[0] for c in (10, 8, 7, 4, 3, 1, 0)] == \
        ["A", "A", "B", "B", "C", "C", "F"]
    with pytest.raises(ValueError):
        grade_points(6, 5)


def test_avg_best_and_gpa_on_constructed_records():
    records = ([rec("a", i < 4, 1) for i in range(5)]            # 4/5: A, level 1
               + [rec("b", i < 1, 3, "qft") for i in range(5)]   # 1/5: C, level 3
               + [rec("c", False, 5, "qft") for _ in range(5)])  # 0/5: F, level 5
    s = summarize_attempts(records)
    rows = s["per_problem"]
    assert rows["a"]["avg_at_k"] == pytest.approx(0.8) and rows["a"]["best_at_k"] == 1.0
    assert rows["b"]["avg_at_k"] == pytest.approx(0.2) and rows["b"]["grade"] == "C"
    assert rows["c"]["best_at_k"] == 0.0 and rows["c"]["grade"] == "F"
    assert s["overall"]["avg_at_k"] == pytest.approx((0.8 + 0.2 + 0) / 3)
    assert s["overall"]["best_at_k"] == pytest.approx(2 / 3)
    assert s["overall"]["gpa"] == pytest.approx((1 * 4 + 3 * 2 + 5 * 0) / 9)
    assert s["per_level"]["3"]["gpa"] == 2 and s["per_level"]["1"]["gpa"] == 4
    assert s["per_domain"]["qft"]["n_problems"] == 2
    assert s["per_domain"]["qft"]["gpa"] == pytest.approx(6 / 8)
    assert s["overall"]["grades"] == {"A": 1, "B": 0, "C": 1, "F": 1}
    assert s["attempts_per_problem"] == 5 and s["verdicts"]["correct"] == 5


def test_per_problem_counts_verdicts_and_uneven_k():
    records = [rec("x", True, 2), rec("x", False, 2, verdict="timeout"),
               rec("y", False, 4, verdict="no_code")]
    rows = per_problem(records)
    assert rows["x"]["k"] == 2 and rows["x"]["grade"] == "B"  # 1 of 2 = 1/2 >= 2/5
    assert rows["x"]["verdicts"] == {"correct": 1, "timeout": 1}
    assert summarize_attempts(records)["attempts_per_problem"] == [1, 2]


def test_holistic_grading_hook():
    assert holistic_grade("text", statement="s", expert_solution="e", verdict="wrong") is None
    seen = {}

    def grader(prompt):
        seen["prompt"] = prompt
        return "The derivation misses a factor.\nB"

    grade = holistic_grade("my solution", statement="S", expert_solution="E",
                           verdict="correct", grader=grader)
    assert grade == "B" and "my solution" in seen["prompt"] and "E" in seen["prompt"]


# ---- the episode -------------------------------------------------------------------------
def test_prompt_states_requirements_and_hides_the_reference():
    suite = TPBenchSuite()
    for problem in PROBLEMS:
        episode = suite.episode(problem.id, seed=0)
        prompt = episode.prompt
        assert problem.function in prompt and "```python" in prompt
        ref_body = problem.reference.strip().splitlines()[-1].strip()
        assert ref_body not in prompt, problem.id
        assert problem.solution.strip()[:60] not in prompt
        # nor the independent check or the wrong answers (a route to the answer)
        check_body = problem.independent_check.code.strip().splitlines()[-1].strip()
        assert check_body not in prompt and problem.independent_check.method not in prompt
        assert all(w.explanation not in prompt for w in problem.wrong_answers)
        assert json.dumps(episode.workspace())  # no reference in the workspace either
        assert problem.reference not in json.dumps(episode.workspace())


def test_submit_rejects_bad_input_without_charging():
    episode = TPBenchSuite().episode(PROBLEMS[0].id, seed=0)
    for bad in ({}, {"solution": ""}, {"solution": "   "}, {"solution": 3},
                {"solution": "x", "extra": 1}):
        result = episode.call("submit", bad)
        assert result.is_error and not episode.done, bad
        assert episode.usage.submissions == 0
    assert episode.call("nope", {}).is_error
    result = episode.call("submit", {"solution": PROBLEMS[0].reference_solution_text()})
    assert not result.is_error and episode.done
    assert episode.call("submit", {"solution": "again"}).is_error  # one submission only
    record = episode.record(agent="test")
    assert record.passed and record.details["verdict"] == "correct"
    assert record.details["problem_version"] == PROBLEMS[0].version


def test_unanswered_episode_records_its_problem():
    episode = TPBenchSuite().episode(PROBLEMS[0].id, seed=2)
    record = episode.record(agent="test")
    assert not record.passed and record.details["verdict"] == "no_answer"
    assert record.details["level"] == PROBLEMS[0].level


# ---- plans, options, agents ---------------------------------------------------------------
def test_plan_filters_levels_domains_and_attempts():
    suite = get_suite("tpbench")
    assert parse_levels("1-5") == (1, 2, 3, 4, 5) and parse_levels("3") == (3,)
    assert parse_levels("2,4") == (2, 4)
    for bad in ("0", "6", "x", "3-1"):
        with pytest.raises(ValueError):
            parse_levels(bad)
    specs = suite.episodes(level=(3,), seeds=range(3))
    level3 = [p for p in PROBLEMS if p.level == 3]
    assert len(specs) == 3 * len(level3) and {s.seed for s in specs} == {0, 1, 2}
    specs = suite.episodes(domain=("cosmology",))
    assert specs and all(suite.problem(s.task_id).domain == "cosmology" for s in specs)
    with pytest.raises(ValueError, match="Unknown domain"):
        suite.episodes(domain=("alchemy",))
    with pytest.raises(ValueError):
        suite.episode(PROBLEMS[0].id, seed=0, level=3)


def test_scripted_agents_through_the_runner(tmp_path):
    suite = get_suite("tpbench")
    chosen = {}
    for p in PROBLEMS:  # one problem per domain keeps this quick; check covers all
        chosen.setdefault(p.domain, p.id)
    specs = [s for s in suite.episodes(seeds=range(2)) if s.task_id in set(chosen.values())]
    for agent, expected in (("reference", True), ("wrong-sign", False), ("wrong-3", False)):
        out = tmp_path / agent
        run_episodes(specs, out_dir=out, agent=agent, executor="serial", show_progress=False)
        records = read_records(out / "records.jsonl")
        assert len(records) == len(specs)
        assert all(r["passed"] is expected for r in records), agent
        summary = suite.summarize(records)
        assert summary["overall"]["avg_at_k"] == (1.0 if expected else 0.0)
        assert summary["overall"]["gpa"] == (4.0 if expected else 0.0)
        assert set(summary["per_domain"]) == set(chosen)


def test_check_cli_reports_broken_files(tmp_path):
    import yaml

    good = builtin_problem_dir() / "well-position-spread.yaml"
    data = yaml.safe_load(good.read_text())
    (tmp_path / "well-position-spread.yaml").write_text(good.read_text())
    broken = dict(data, id="broken-reference",
                  reference=data["reference"].replace("return", "return 1.01 *", 1))
    (tmp_path / "broken-reference.yaml").write_text(yaml.safe_dump(broken))
    no_discrimination = dict(data, id="same-wrong", wrong_answers=[
        {"explanation": "the reference itself", "code": data["reference"]}])
    (tmp_path / "same-wrong.yaml").write_text(yaml.safe_dump(no_discrimination))
    (tmp_path / "invalid.yaml").write_text(yaml.safe_dump(dict(data, id="invalid", level=9)))
    # through the main command, as `discoverygym tpbench check DIR --json`
    result = CliRunner().invoke(main_app, ["tpbench", "check", str(tmp_path), "--json"])
    assert result.exit_code == 1
    entries = {p["file"].rsplit("/", 1)[-1]: p for p in json.loads(result.stdout)["problems"]}
    assert entries["well-position-spread.yaml"]["ok"]
    assert not entries["same-wrong.yaml"]["ok"]
    assert "test inputs do not see this slip" in entries["same-wrong.yaml"]["problems"][0]
    assert "field 'level'" in entries["invalid.yaml"]["problems"][0]
    # a changed reference is still self-consistent, but its independent check disagrees
    broken = entries["broken-reference.yaml"]
    assert broken["reference_verdict"] == "correct" and not broken["ok"]
    assert "independent check disagrees" in broken["problems"][0]


def test_report_shows_pass_rates_by_level_and_domain(tmp_path):
    from discoverygym.report.html import build_report

    suite = get_suite("tpbench")
    chosen = {}
    for p in PROBLEMS:
        chosen.setdefault(p.level, p.id)
    specs = [s for s in suite.episodes() if s.task_id in set(chosen.values())]
    run_episodes(specs, out_dir=tmp_path, agent="wrong-sign", executor="serial",
                 show_progress=False)
    text = build_report(tmp_path)
    assert "tpbench: pass rate by level" in text and "tpbench: pass rate by domain" in text
    assert text.count('src="data:image/png;base64,') >= 2 and "<img" in text
    assert "0/1" in text and "GPA" in text


def test_check_flags_an_argument_that_never_varies(tmp_path):
    import yaml

    good = builtin_problem_dir() / "well-position-spread.yaml"
    data = yaml.safe_load(good.read_text())
    data["arguments"][2]["range"] = [1.0, 1.0]  # x0 pinned
    data["tests"]["cases"] = [dict(c, x0=1.0) for c in data["tests"]["cases"]]
    (tmp_path / "well-position-spread.yaml").write_text(yaml.safe_dump(data))
    report = check_problems(tmp_path)
    assert not report["ok"]
    assert "argument 'x0' never varies" in report["problems"][0]["problems"][0]


def test_changed_problems_bump_their_version():
    """A change to what a solver or the verifier sees needs a new version (records and
    caches carry id@vN). After a deliberate change: bump `version`, then run
    `python -c "from discoverygym.suites.tpbench.problem import *;
    write_fingerprints(builtin_problem_dir())"`."""
    from discoverygym.suites.tpbench.problem import FINGERPRINTS_FILE

    recorded = json.loads((builtin_problem_dir() / FINGERPRINTS_FILE).read_text())
    for p in PROBLEMS:
        assert p.key in recorded, f"{p.key}: new problem or version; record its fingerprint"
        assert recorded[p.key] == p.fingerprint(), f"{p.id} changed: bump its version"
