"""`discoverygym calibrate tpbench` on a small seed set: the reference passes, the
constant function and the empty answer fail, no problem leaks."""

from __future__ import annotations

import json

from discoverygym.calibrate import VALID, calibrate
from discoverygym.suites.tpbench.baselines import AGENTS, CALIBRATION
from discoverygym.suites.tpbench.baselines.trivial import constant_solution


def test_calibration_names_agents_of_the_suite():
    assert {a for names in CALIBRATION.values() for a in names} <= set(AGENTS)
    assert CALIBRATION["oracle"] == ["reference"]


def test_constant_solution_defines_the_required_function():
    text = constant_solution("f", ["a", "b"])
    code = text.split("```python\n")[1].split("```")[0]
    namespace: dict = {}
    exec(code, namespace)  # noqa: S102 - our own two-line function
    assert namespace["f"](3.0, -2.0) == 1.0


def test_level_one_problems_are_valid(tmp_path):
    result = calibrate("tpbench", seeds=[0], raw_options={"level": "1"}, runs_dir=tmp_path,
                       executor="serial")
    assert len(result.tasks) == 7 and not result.infrastructure_failures
    for task in result.tasks:
        assert task.verdict == VALID, (task.task_id, task.reason)
        assert task.rates["reference"].passed == 1
        assert task.rates["constant"].passed == 0
    # the constant function is run and compared, not refused: its verdict is "wrong"
    verdicts = {json.loads(line)["details"]["verdict"]
                for line in (tmp_path / "constant" / "records.jsonl").read_text().splitlines()}
    assert verdicts == {"wrong"}
