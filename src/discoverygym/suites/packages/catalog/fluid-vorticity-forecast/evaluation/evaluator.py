"""Evaluator: relative L2 error of the vorticity forecast per flow.
Reads OUTPUT_DIR/<flow>/forecast.npy (shape (2, 64, 64), real, finite)."""

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
METRIC = "relative_l2_error"


def _read_forecast(path, shape):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path.name} is not a readable .npy array ({exc})") from exc
    if not isinstance(array, np.ndarray) or array.shape != shape:
        got = getattr(array, "shape", type(array).__name__)
        raise ValueError(f"{path.name} must have shape {shape}, got {got}")
    if array.dtype.kind not in "fiu":
        raise ValueError(f"{path.name} must hold real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{path.name} holds non-finite values")
    return array


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        truth = np.load(truth_dir / "forecast.npy").astype(np.float64)
        try:
            forecast = _read_forecast(output_dir / name / "forecast.npy", truth.shape)
            error = np.linalg.norm(forecast - truth) / np.linalg.norm(truth)
            results[name] = {METRIC: float(error)}
        except ValueError as exc:
            results[name] = {METRIC: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
