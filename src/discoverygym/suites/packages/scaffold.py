"""`discoverygym package new NAME`: a package skeleton in the published layout, with
every section and file a check looks for, and TODO markers where the author decides."""

from __future__ import annotations

import json
from pathlib import Path

README = """# {title}

## Scientific problem

TODO: the question, in plain words, without naming the paper or the method.

## Task objective

TODO: what the agent must produce for each dataset.

## Dataset information

TODO: what is in data/<instance>/ (see data_description.md).

## Evaluation metrics

TODO: the primary metric and its direction.

## Output format

For each instance write `<OUTPUT_DIR>/<instance>/answer.json` containing `{{"value": <number>}}`.

## Submission guidelines

One file per instance. A missing, unreadable or non-finite answer counts as a failure.
"""

EVALUATOR = '''"""Evaluator for {name}. Reads OUTPUT_DIR/<instance>/answer.json = {{"value": number}}."""

import json
import math
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
METRIC = "absolute_error"


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {{}}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        truth = json.loads((truth_dir / "answer.json").read_text())["value"]
        try:
            data = json.loads((output_dir / name / "answer.json").read_text())
            value = data["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) \\
                    or not math.isfinite(value):
                raise ValueError("value must be a finite number")
            results[name] = {{METRIC: abs(value - truth)}}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            results[name] = {{METRIC: None, "error": f"{{type(exc).__name__}}: {{exc}}"}}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
'''


def scaffold(name: str, parent: Path) -> Path:
    """Create `parent/name` with a template package; refuses to overwrite."""
    root = Path(parent) / name
    if root.exists():
        raise FileExistsError(f"{root} already exists")
    instance = "instance_1"
    for sub in (f"problem/data/{instance}", f"evaluation/ground_truth/{instance}", "environment",
                "licenses"):
        (root / sub).mkdir(parents=True)
    metadata = {
        "task_name": name, "workflow_topology": "strict_single_step",
        "methodology_paradigm": "TODO", "tooling_metadata": {"languages": ["python"]},
        "domain_metadata": {"primary_domain": "TODO", "sub_domain": "TODO", "domain_tags": []},
        "compute_resource_requirements": {"cpu": 1, "gpu": 0, "runtime": "1h"},
        "performance_entries": [{"dataset_name": instance, "metrics": [{
            "name": "absolute_error", "is_primary": True, "metric_direction": "lower_is_better",
            "source_description": "TODO", "unit": "",
            "sota_score": [{"value": "TODO", "method": "TODO: the publication, or your "
                                                      "strongest method",
                            "provenance": {"label": "TODO: literature, or our strongest "
                                                    "method, run once and frozen",
                                           "method": "TODO", "run_by": "TODO",
                                           "date": "TODO", "command": "TODO"}}],
            "baseline_score": {"value": "TODO: a simpler honest method's figure, worse "
                                        "than the SOTA", "method": "TODO"}}]}],
    }
    (root / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n")
    (root / "problem/README.md").write_text(README.format(title=name))
    (root / "problem/data_description.md").write_text("# Data\n\nTODO: files, columns, units.\n")
    (root / f"problem/data/{instance}/README.txt").write_text("TODO: put the data here.\n")
    (root / "evaluation/evaluator.py").write_text(EVALUATOR.format(name=name))
    (root / f"evaluation/ground_truth/{instance}/answer.json").write_text('{"value": 1.0}\n')
    (root / "environment/requirements.txt").write_text("numpy\n")
    (root / "licenses/LICENSE.md").write_text("TODO: the licence of the data and code.\n")
    return root
