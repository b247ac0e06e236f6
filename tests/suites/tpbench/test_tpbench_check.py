"""`discoverygym tpbench check`: independent checks and wrong answers of problem files.

A sample of shipped problems passes the whole check; small temporary problems show
that a disagreeing independent check or a wrong answer that passes fails the command,
that the check's code runs isolated like an answer, that the old single-wrong-answer
fields still load, and that published domain spellings map to the suite's domains."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from discoverygym.cli import app as main_app
from discoverygym.core import get_suite
from discoverygym.sandbox import WEAK_LEVELS, isolation_level
from discoverygym.suites.tpbench.check import MIN_WRONG_ANSWERS, check_problems
from discoverygym.suites.tpbench.importer import row_to_problem_data
from discoverygym.suites.tpbench.problem import (
    DOMAINS,
    builtin_problem_dir,
    canonical_domain,
    load_problems,
    problem_from_dict,
)

PROBLEMS = load_problems(builtin_problem_dir())
#: One shipped problem per level whose independent check is quick (the full check of
#: every shipped problem is `discoverygym tpbench check`, about a minute and a half).
SAMPLE = ("well-position-spread", "three-spring-normal-modes",
          "sds-critical-impact-parameter", "ising-chain-bond-correlation",
          "schwarzschild-exact-periapsis-advance")


def toy(**changes) -> dict:
    """A small level-3 problem: x**n, checked by repeated multiplication."""
    data = {
        "id": "toy-power", "version": 1, "title": "Integer power", "level": 3,
        "domain": "qm", "statement": "Compute x to the n.", "answer_requirements": "f(x, n)",
        "solution": "Multiply.", "reference": "def f(x, n):\n    return x ** n\n",
        "function": "f",
        "arguments": [{"name": "x", "type": "float", "range": [0.5, 2.0]},
                      {"name": "n", "type": "int", "range": [1, 4]}],
        "tests": {"seed": 3, "samples": 6, "cases": [{"x": 1.5, "n": 3}]},
        "wrong_answers": [
            {"explanation": "one power too many", "code": "def f(x, n):\n    return x ** (n + 1)\n"},
            {"explanation": "a 0.1 % slip", "code": "def f(x, n):\n    return 1.001 * x ** n\n"},
            {"explanation": "sign slip", "code": "def f(x, n):\n    return -x ** n\n"},
        ],
        "independent_check": {
            "method": "repeated multiplication", "tolerance": {"rtol": 1e-12, "atol": 0.0},
            "code": "def f(x, n):\n    out = 1.0\n    for _ in range(n):\n        out *= x\n"
                    "    return out\n"},
    }
    data.update(changes)
    return data


def write(directory, data: dict) -> None:
    (directory / f"{data['id']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def run_check(*args: str):
    result = CliRunner().invoke(main_app, ["tpbench", "check", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


# ---- the shipped set -----------------------------------------------------------------
def test_a_sample_of_shipped_problems_passes_the_whole_check():
    assert {p.level for p in PROBLEMS if p.id in SAMPLE} == {1, 2, 3, 4, 5}
    code, report = run_check("--only", ",".join(SAMPLE), "--strict")
    assert code == 0 and report["n_files"] == len(SAMPLE) == report["n_ok"]
    for entry in report["problems"]:
        assert entry["reference_verdict"] == "correct"
        assert entry["independent_check"]["agreed"], entry["id"]
        assert entry["wrong_answers"] and all(w["rejected"] for w in entry["wrong_answers"])
        # every slip is visible somewhere: its smallest difference is reported
        assert all(w["min_rel_diff"] is not None for w in entry["wrong_answers"])
    totals = report["totals"]
    assert totals["independent_agree"] == totals["independent_checks"] == len(SAMPLE)
    assert totals["wrong_rejected"] == totals["wrong_answers"] >= 3 * 3 + 2


def test_every_shipped_problem_carries_a_check_and_enough_wrong_answers():
    for p in PROBLEMS:
        assert p.independent_check is not None and p.independent_check.method, p.id
        assert len(p.wrong_answers) >= MIN_WRONG_ANSWERS[p.level], p.id
        assert all(w.explanation and w.code.strip() for w in p.wrong_answers), p.id
        assert len({w.code for w in p.wrong_answers}) == len(p.wrong_answers), p.id
        # the check is another route, not the reference pasted in
        assert p.independent_check.code.strip() != p.reference.strip(), p.id
    assert MIN_WRONG_ANSWERS[3] == MIN_WRONG_ANSWERS[5] == 3


# ---- the command on small problem files ------------------------------------------------
def test_check_reports_agreement_and_the_visibility_of_each_slip(tmp_path):
    write(tmp_path, toy())
    code, report = run_check(str(tmp_path))
    assert code == 0
    (entry,) = report["problems"]
    assert entry["domain"] == "quantum_mechanics"  # 'qm' in the file
    assert entry["independent_check"]["agreed"]
    assert entry["independent_check"]["max_rel_diff"] < 1e-12
    slips = {w["explanation"]: w for w in entry["wrong_answers"]}
    assert all(w["verdict"] == "wrong" for w in slips.values())
    assert slips["a 0.1 % slip"]["min_rel_diff"] == pytest.approx(1e-3, rel=1e-6)
    assert slips["a 0.1 % slip"]["max_rel_diff"] == pytest.approx(1e-3, rel=1e-6)
    assert slips["a 0.1 % slip"]["n_rejecting"] == slips["a 0.1 % slip"]["n_tests"] == 7
    assert slips["sign slip"]["min_rel_diff"] == pytest.approx(2.0)
    assert slips["one power too many"]["min_rel_diff"] > 0  # |x - 1| at the drawn x


def test_a_disagreeing_independent_check_fails_the_command(tmp_path):
    off = toy(independent_check={"method": "a check with a slip", "tolerance": {"rtol": 1e-6},
                                 "code": "def f(x, n):\n    return x ** n * (1 + 1e-4)\n"})
    write(tmp_path, off)
    code, report = run_check(str(tmp_path))
    assert code == 1
    (entry,) = report["problems"]
    assert not entry["ok"] and not entry["independent_check"]["agreed"]
    assert "independent check disagrees" in entry["problems"][0]
    assert entry["independent_check"]["max_rel_diff"] == pytest.approx(1e-4, rel=1e-6)
    # the same check passes under a tolerance that admits it
    write(tmp_path, toy(independent_check=dict(off["independent_check"],
                                               tolerance={"rtol": 1e-3})))
    assert run_check(str(tmp_path))[0] == 0


def test_a_wrong_answer_that_passes_fails_the_command(tmp_path):
    # rounding slip invisible on the test inputs: x ** n and x ** n + 1e-12
    weak = toy(wrong_answers=toy()["wrong_answers"] + [
        {"explanation": "an invisible slip", "code": "def f(x, n):\n    return x ** n + 1e-12\n"}])
    write(tmp_path, weak)
    code, report = run_check(str(tmp_path))
    assert code == 1
    (entry,) = report["problems"]
    assert entry["wrong_answers"][-1]["verdict"] == "correct"
    assert not entry["wrong_answers"][-1]["rejected"]
    assert entry["wrong_answers"][-1]["n_rejecting"] == 0
    assert "wrong answer 3 (an invisible slip) passes every test" in entry["problems"][0]


@pytest.mark.skipif(isolation_level() in WEAK_LEVELS, reason="needs filesystem isolation")
def test_the_check_code_runs_isolated_like_an_answer(tmp_path):
    """A check from a user's file cannot touch the host: it runs in the sandbox, which
    hides the problem directory and keeps its writes to itself."""
    problems = tmp_path / "problems"
    problems.mkdir()
    marker = tmp_path / "written-by-check"
    spy = ("import pathlib\n"
           f"pathlib.Path({str(marker)!r}).write_text('x')\n"
           f"SOURCE = pathlib.Path({str(problems / 'toy-power.yaml')!r}).read_text()\n"
           "def f(x, n):\n    return x ** n\n")
    write(problems, toy(independent_check={"method": "spy", "code": spy}))
    code, report = run_check(str(problems))
    assert code == 1 and not marker.exists()
    (entry,) = report["problems"]
    assert "independent check failed to run" in entry["problems"][0]
    # a check that hangs is stopped by the limit, not by the host waiting forever
    from discoverygym.suites.tpbench import check as check_module

    slow = toy(independent_check={"method": "sleeps",
                                  "code": "import time\ndef f(x, n):\n    time.sleep(60)\n"})
    write(problems, slow)
    limit = check_module.CHECK_TIME_LIMIT_S
    check_module.CHECK_TIME_LIMIT_S = 2.0
    try:
        report = check_problems(problems)
    finally:
        check_module.CHECK_TIME_LIMIT_S = limit
    assert "timeout" in report["problems"][0]["independent_check"]["error"]


def test_missing_checks_and_too_few_wrong_answers_warn_or_fail_under_strict(tmp_path):
    data = toy(wrong_answers=toy()["wrong_answers"][:1])
    del data["independent_check"]
    write(tmp_path, data)
    code, report = run_check(str(tmp_path))
    assert code == 0
    warnings = report["problems"][0]["warnings"]
    assert any("no independent_check" in w for w in warnings)
    assert any("should carry at least 3" in w for w in warnings)
    code, report = run_check(str(tmp_path), "--strict")
    assert code == 1 and len(report["problems"][0]["problems"]) == 2
    code, report = run_check(str(tmp_path), "--only", "toy-power,nope")
    assert code == 1 and "no problem file for ['nope']" in report["error"]


def test_old_single_wrong_answer_fields_load_as_one_entry():
    data = toy(plausible_wrong="def f(x, n):\n    return x * n\n",
               wrong_explanation="multiplies instead of raising")
    del data["wrong_answers"]
    problem = problem_from_dict(data)
    assert [w.explanation for w in problem.wrong_answers] == ["multiplies instead of raising"]
    assert problem.plausible_wrong == data["plausible_wrong"]
    assert "x * n" in problem.wrong_solution_text()
    with pytest.raises(ValueError, match=r"wrong_answers.0.code.*takes \['x'\]"):
        problem_from_dict(toy(wrong_answers=[{"explanation": "e",
                                              "code": "def f(x):\n    return x\n"}]))
    with pytest.raises(ValueError, match="independent_check"):
        problem_from_dict(toy(independent_check={"code": "def f(x, n):\n    return 1\n"}))


def test_table_counts_problems_per_level_and_domain():
    result = CliRunner().invoke(main_app, ["tpbench", "check", "--table"])
    assert result.exit_code == 0
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines()
            if line.startswith("| ") and "domain" not in line}
    counts = Counter((p.domain, p.level) for p in PROBLEMS)
    for domain in DOMAINS:
        cells = [c.strip() for c in rows[domain].split("|")[2:-1]]
        assert cells == [str(counts[(domain, lv)]) for lv in range(1, 6)] + [
            str(sum(counts[(domain, lv)] for lv in range(1, 6)))]
    assert f"**{len(PROBLEMS)}**" in rows["**total**"]


# ---- domain spellings of published tables -------------------------------------------------
@pytest.mark.parametrize("published, ours", [
    ("qm", "quantum_mechanics"), ("QFT", "quantum_field_theory"),
    ("High Energy Theory", "quantum_field_theory"), ("cm", "classical_mechanics"),
    ("E&M", "electromagnetism"), ("em", "electromagnetism"), ("GR", "general_relativity"),
    ("cosmo", "cosmology"), ("Stat Mech", "statistical_mechanics"),
    ("sm", "statistical_mechanics"), ("Quantum Mechanics", "quantum_mechanics"),
    ("cosmology", "cosmology"), ("Condensed Matter", "condensed_matter"),
])
def test_published_domain_names_map_to_the_suites(published, ours):
    assert canonical_domain(published) == ours


def test_domain_option_accepts_both_spellings():
    suite = get_suite("tpbench")
    parse = {o.name: o for o in suite.run_options}["domain"].parse
    assert parse("qm, gr") == ("quantum_mechanics", "general_relativity")
    for short, long in (("qm", "quantum_mechanics"), ("stat mech", "statistical_mechanics"),
                        ("qft", "quantum_field_theory"), ("cosmo", "cosmology")):
        specs = suite.episodes(domain=(short,))
        assert specs and specs == suite.episodes(domain=(long,))
    with pytest.raises(ValueError, match="Unknown domain"):
        suite.episodes(domain=("alchemy",))


def test_imported_rows_get_the_suites_domain_names():
    row = {"problem_id": "A", "domain": "stat mech", "difficulty_level": "2",
           "problem": "p", "code_answer_requirements": "def f(x: float):\n    ...",
           "reference_implementation": "def f(x: float):\n    return x"}
    assert row_to_problem_data(row)["domain"] == "statistical_mechanics"
    # a sidecar may give the row its wrong answers and independent check
    side = {"A": {"wrong_answers": [{"explanation": "doubles", "code": "def f(x):\n    return 2 * x"}],
                  "independent_check": {"method": "identity", "code": "def f(x):\n    return x"}}}
    problem = problem_from_dict(row_to_problem_data(row, side))
    assert problem.wrong_answers[0].explanation == "doubles"
    assert problem.independent_check.method == "identity"


def test_problems_read_alike_with_libyaml_and_pure_python():
    """Problem files are read with libyaml's safe loader where PyYAML has it: every
    shipped problem must read exactly as PyYAML's pure-Python safe_load reads it."""
    from pathlib import Path

    from discoverygym.suites.tpbench import problem as problem_module

    files = sorted((Path(problem_module.__file__).parent / "problems").rglob("*.yaml"))
    assert len(files) >= 80
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert problem_module.safe_load_yaml(text) == yaml.safe_load(text), path.name
    with pytest.raises(yaml.YAMLError):
        problem_module.safe_load_yaml("!!python/object/apply:os.system ['true']")
