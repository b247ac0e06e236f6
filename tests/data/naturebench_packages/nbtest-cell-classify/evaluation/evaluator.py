import csv
import os

EVAL_DIR = os.path.dirname(os.path.abspath(__file__))
GROUND_TRUTH_DIR = os.path.join(EVAL_DIR, "ground_truth")
OUTPUT_DIR = os.environ.get("OUTPUT_DIR")
if not OUTPUT_DIR:
    raise RuntimeError("OUTPUT_DIR environment variable is required")

OUTPUT_FILE = "predictions.csv"
INSTANCES = ["pbmc_small", "lung_atlas", "unreported_cohort"]
METRIC_NAMES = ["Accuracy"]


class ValidationError(Exception):
    pass


def error_result(error_msg):
    result = {name: None for name in METRIC_NAMES}
    result["error"] = str(error_msg)
    return result


def read_labels(path):
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    out = {}
    for row in rows:
        try:
            label = int(row["label"])
        except (KeyError, TypeError, ValueError):
            raise ValidationError("label must be 0 or 1") from None
        if label not in (0, 1):
            raise ValidationError("label must be 0 or 1")
        out[row["id"]] = label
    return out


def load_and_validate(instance_name):
    pred_file = os.path.join(OUTPUT_DIR, instance_name, OUTPUT_FILE)
    if not os.path.exists(pred_file):
        raise ValidationError(f"Output file not found: {instance_name}/{OUTPUT_FILE}")
    return read_labels(pred_file)


def calculate_metrics(predictions, truth):
    correct = sum(predictions.get(k) == v for k, v in truth.items())
    return {"Accuracy": correct / len(truth)}


def run_evaluation():
    results = {}
    for instance_name in INSTANCES:
        try:
            predictions = load_and_validate(instance_name)
            truth = read_labels(os.path.join(GROUND_TRUTH_DIR, instance_name, "test_labels.csv"))
            results[instance_name] = calculate_metrics(predictions, truth)
        except ValidationError as exc:
            results[instance_name] = error_result(exc)
    return results


if __name__ == "__main__":
    import json
    print(json.dumps(run_evaluation(), indent=2))
