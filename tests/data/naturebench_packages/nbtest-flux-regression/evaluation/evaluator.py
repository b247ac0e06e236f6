import json
import math
import os

EVAL_DIR = os.path.dirname(os.path.abspath(__file__))
GROUND_TRUTH_DIR = os.path.join(EVAL_DIR, "ground_truth")
OUTPUT_DIR = os.environ.get("OUTPUT_DIR")
if not OUTPUT_DIR:
    raise RuntimeError("OUTPUT_DIR environment variable is required")

INSTANCES = ["site_a", "site_b"]


def error_result(message):
    return {"RMSE": None, "error": str(message)}


def main():
    results = {}
    for instance in INSTANCES:
        path = os.path.join(OUTPUT_DIR, instance, "flux.json")
        truth = json.load(open(os.path.join(GROUND_TRUTH_DIR, instance, "reference_flux.json")))
        try:
            with open(path) as handle:
                predicted = json.load(handle)
        except (OSError, ValueError) as exc:
            results[instance] = error_result(f"cannot read {instance}/flux.json: {exc}")
            continue
        if (not isinstance(predicted, list) or len(predicted) != len(truth)
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                           and math.isfinite(v) for v in predicted)):
            results[instance] = error_result("flux.json must list one finite number per query")
            continue
        rmse = math.sqrt(sum((p - t) ** 2 for p, t in zip(predicted, truth, strict=True)) / len(truth))
        results[instance] = {"RMSE": rmse, "MAE": sum(abs(p - t) for p, t in zip(predicted, truth, strict=True)) / len(truth)}
    return results
