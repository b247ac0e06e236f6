"""Evaluator: absolute error of alpha per system. Reads OUTPUT_DIR/<system>/answer.json."""

import json
import math
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRIC = "absolute_error"


def _read_alpha(path):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON ({exc})") from exc
    value = data.get("alpha") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError('answer.json must hold {"alpha": <finite number>}')
    return float(value)


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        truth = json.loads((truth_dir / "answer.json").read_text())["alpha"]
        try:
            alpha = _read_alpha(output_dir / name / "answer.json")
            results[name] = {METRIC: abs(alpha - truth)}
        except ValueError as exc:
            results[name] = {METRIC: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
