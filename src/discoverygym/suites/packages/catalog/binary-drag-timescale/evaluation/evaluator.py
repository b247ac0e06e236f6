"""Evaluator: relative error of the drag timescale per system.
Reads OUTPUT_DIR/<system>/answer.json = {"tau_s": number}."""

import json
import math
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRIC = "relative_error"


def _read_tau(path):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON ({exc})") from exc
    value = data.get("tau_s") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0:
        raise ValueError('answer.json must hold {"tau_s": <positive finite number>}')
    return float(value)


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        truth = json.loads((truth_dir / "answer.json").read_text())["tau_s"]
        try:
            tau = _read_tau(output_dir / name / "answer.json")
            results[name] = {METRIC: abs(tau - truth) / truth}
        except ValueError as exc:
            results[name] = {METRIC: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
