"""Evaluator: RMS of predicted minus held-out RV per system.
Reads OUTPUT_DIR/<system>/predictions.csv (time_days,instrument,rv_ms)."""

import csv
import json
import math
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRIC = "rms_error_ms"


def _rows(path):
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _score(truth_rows, path):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    try:
        rows = _rows(path)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path.name} is not a readable CSV ({exc})") from exc
    if len(rows) != len(truth_rows):
        raise ValueError(f"expected {len(truth_rows)} rows, got {len(rows)}")
    total = 0.0
    for k, (mine, true) in enumerate(zip(rows, truth_rows, strict=True)):
        try:
            t = float(mine["time_days"])
            value = float(mine["rv_ms"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"row {k + 1}: needs numeric time_days and rv_ms") from exc
        if abs(t - float(true["time_days"])) > 1e-4 or mine.get("instrument") != true["instrument"]:
            raise ValueError(f"row {k + 1}: time or instrument does not match query.csv")
        if not math.isfinite(value):
            raise ValueError(f"row {k + 1}: rv_ms is not finite")
        total += (value - float(true["rv_ms"])) ** 2
    return math.sqrt(total / len(truth_rows))


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        try:
            rms = _score(_rows(truth_dir / "predictions.csv"), output_dir / name / "predictions.csv")
            results[name] = {METRIC: rms}
        except ValueError as exc:
            results[name] = {METRIC: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
