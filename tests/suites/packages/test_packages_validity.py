"""Validity of finished package runs: deterministic checks (hidden reads, copies of the
ground truth, degenerate outputs), then the optional grader model through Inspect with
strict JSON; a grader failure is its own outcome, never "invalid"."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re

import numpy as np
import pytest

from discoverygym.core import get_suite
from discoverygym.suites.packages.shipped import CATALOG
from discoverygym.suites.packages.validity import (
    grade,
    grader_prompt,
    inspect_grader,
    parse_verdict,
    validate_records,
)

FLUID = CATALOG / "fluid-vorticity-forecast"
RV = CATALOG / "rv-holdout-forecast"


def _npy(array: np.ndarray) -> str:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return base64.b64encode(buffer.getvalue()).decode()


def _play(task: str, writes: dict[str, str | np.ndarray], reads: tuple[str, ...] = ()):
    episode = get_suite("packages").episode(task)
    view = episode.view()
    for path in reads:
        view.call("read_file", {"path": path})
    for path, content in writes.items():
        if isinstance(content, np.ndarray):
            view.call("write_file", {"path": path, "content": _npy(content),
                                     "encoding": "base64"})
        else:
            view.call("write_file", {"path": path, "content": content})
    view.call("evaluate", {})
    view.call("submit", {})
    return episode.record(agent="test").to_dict()


def _checks(record) -> set[str]:
    return {f["check"] for f in record["details"]["validity"]["findings"]}


def test_copied_ground_truth_is_invalid_even_with_a_high_score():
    truth = {f"flow_{k}/forecast.npy": np.load(FLUID / f"evaluation/ground_truth/flow_{k}/"
                                                        "forecast.npy") for k in (1, 2)}
    record = _play("fluid-vorticity-forecast", truth)
    assert record["value"] > 0.9  # a perfect forecast scores far above the SOTA
    assert _checks(record) == {"ground_truth_copy"}
    report = validate_records([record])
    assert report["verdicts"][0]["outcome"] == "invalid"
    assert report["aggregate_valid_only"]["mean_g"] == -1.0
    assert report["aggregate_valid_only"]["completion_rate"] == 0.0


def test_values_copied_in_another_format_are_caught_but_given_keys_are_not():
    rows = (RV / "evaluation/ground_truth/system_a/predictions.csv").read_text().splitlines()
    # Same values, one more decimal: no longer the same bytes.
    copied = "time_days,instrument,rv_ms\n" + "".join(
        f"{float(t):.7f},{inst},{float(v):.6f}\n" for t, inst, v in
        (r.split(",") for r in rows[1:]))
    record = _play("rv-holdout-forecast", {"system_a/predictions.csv": copied})
    assert _checks(record) == {"ground_truth_copy"}
    # An honest forecast repeats the query times (given to the agent): no finding.
    honest = "time_days,instrument,rv_ms\n" + "".join(
        f"{float(t):.6f},{inst},{float(v) + 0.37:.5f}\n" for t, inst, v in
        (r.split(",") for r in rows[1:]))
    record = _play("rv-holdout-forecast", {"system_a/predictions.csv": honest})
    assert _checks(record) == set()


def test_degenerate_outputs():
    zeros = np.zeros((2, 64, 64), dtype=np.float32)
    record = _play("fluid-vorticity-forecast", {"flow_1/forecast.npy": zeros})
    assert _checks(record) == {"degenerate"}
    # One non-constant forecast reused for both flows.
    guess = np.load(FLUID / "problem/data/flow_1/snapshots.npy")[-2:]
    record = _play("fluid-vorticity-forecast",
                   {"flow_1/forecast.npy": guess, "flow_2/forecast.npy": guess})
    messages = [f["message"] for f in record["details"]["validity"]["findings"]]
    assert any("same output" in m for m in messages) and _checks(record) == {"degenerate"}
    query = (RV / "problem/data/system_a/query.csv").read_text().splitlines()
    constant = "time_days,instrument,rv_ms\n" + "".join(f"{q},0.0\n" for q in query[1:])
    record = _play("rv-holdout-forecast", {"system_a/predictions.csv": constant})
    assert _checks(record) == {"degenerate"}
    assert "column 'rv_ms' is constant" in record["details"]["validity"]["findings"][0]["message"]


def test_hidden_reads_are_invalid():
    record = _play("gravity-force-law", {"system_1/answer.json": '{"alpha": 0.01}'},
                   reads=("data:../evaluation/ground_truth/system_1/answer.json",))
    assert _checks(record) == {"hidden_read"}
    assert validate_records([record])["verdicts"][0]["outcome"] == "invalid"


def test_code_in_the_tool_log_that_opens_hidden_paths_is_invalid():
    record = _play("gravity-force-law", {"system_1/answer.json": '{"alpha": 0.01}'})
    assert _checks(record) == set()
    record["details"]["tool_log"] = [
        {"tool": "python", "arguments": "ground_truth = fit(data)  # our own variable"}]
    assert validate_records([record])["verdicts"][0]["outcome"] == "passed_deterministic"
    record["details"]["tool_log"].append(
        {"tool": "python", "arguments": "open('/pkgs/x/evaluation/ground_truth/a.json')"})
    verdict = validate_records([record])["verdicts"][0]
    assert verdict["outcome"] == "invalid" and "tool call 2 (python)" in verdict["reason"]


# ---- the grader --------------------------------------------------------------------------
def _mock(*replies):
    from inspect_ai.model import ModelOutput, ModelUsage

    outputs = []
    for reply in replies:
        out = ModelOutput.from_content(model="mockllm/model", content=reply)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        outputs.append(out)
    return inspect_grader("mockllm/model", custom_outputs=outputs)


@pytest.fixture(scope="module")
def honest_record():
    record = _play("gravity-force-law", {"system_1/answer.json": '{"alpha": 0.03000001}',
                                         "system_2/answer.json": '{"alpha": -0.040000001}'})
    assert record["details"]["validity"]["findings"] == [] and record["value"] > 0
    return record


def test_grader_valid_and_invalid_verdicts(honest_record):
    report = validate_records([honest_record], _mock('{"is_valid": true, "reason": "fit"}'))
    assert report["verdicts"][0] == {"task_id": "gravity-force-law", "seed": 0, "findings": [],
                                     "outcome": "valid", "reason": "fit"}
    assert report["aggregate_valid_only"]["mean_g"] == pytest.approx(honest_record["value"])
    report = validate_records([honest_record], _mock(
        ' {"is_valid": false, "reason": "the value was recalled, not fitted"}\n'))
    assert report["verdicts"][0]["outcome"] == "invalid"
    assert report["aggregate_valid_only"]["mean_g"] == -1.0


@pytest.mark.parametrize("reply, fragment", [
    ("Sure! {\"is_valid\": true, \"reason\": \"ok\"}", "not JSON"),
    ("```json\n{\"is_valid\": true, \"reason\": \"ok\"}\n```", "not JSON"),
    ('{"is_valid": "yes", "reason": "ok"}', "must be a boolean"),
    ('{"is_valid": true}', "exactly"),
    ('{"is_valid": true, "reason": "ok", "score": 3}', "exactly"),
    ("[true, \"ok\"]", "exactly"),
])
def test_malformed_grader_replies_are_grader_errors(honest_record, reply, fragment):
    report = validate_records([honest_record], _mock(reply))
    verdict = report["verdicts"][0]
    assert verdict["outcome"] == "grader_error" and fragment in verdict["error"]
    assert report["counts"]["grader_error"] == 1 and report["counts"]["invalid"] == 0
    # The score stands: a grader failure is not an invalid run.
    assert report["aggregate_valid_only"]["mean_g"] == pytest.approx(honest_record["value"])


def test_grader_timeout_and_provider_failure_are_grader_errors(honest_record):
    from inspect_ai.model import ModelOutput

    async def slow(*_args):
        await asyncio.sleep(30)
        return ModelOutput.from_content(model="mockllm/model", content="{}")

    report = validate_records([honest_record], inspect_grader("mockllm/model",
                                                              custom_outputs=slow),
                              timeout_s=0.3)
    verdict = report["verdicts"][0]
    assert verdict["outcome"] == "grader_error" and "timed out" in verdict["error"]

    async def broken(_prompt: str) -> str:
        raise ConnectionError("provider unreachable")

    verdict = asyncio.run(grade(broken, "prompt"))
    assert verdict == {"outcome": "grader_error",
                       "error": "ConnectionError: provider unreachable"}


def test_grader_prompt_holds_the_task_and_actions_but_no_truth(honest_record):
    readme = (CATALOG / "gravity-force-law/problem/README.md").read_text()
    prompt = grader_prompt(readme, honest_record)
    assert "Force law of a binary star" in prompt and '"tool": "write_file"' in prompt
    truth = json.loads((CATALOG / "gravity-force-law/evaluation/ground_truth/system_1/"
                                  "answer.json").read_text())["alpha"]
    numbers = {float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", prompt)}
    assert 0.03000001 in numbers and truth not in numbers and "ground_truth" not in prompt
    assert parse_verdict(' {"is_valid": false, "reason": "x"} ') == {"is_valid": False,
                                                                     "reason": "x"}
