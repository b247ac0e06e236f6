"""The evaluator sources the generated families ship as `evaluation/evaluator.py`.

Each is a complete, NumPy-only program with its configuration in one `CONFIG` line, so
a package reads nothing outside its own folder. `evaluator_source(kind, config)` writes
that line; `load_scorer(kind, config)` runs the very same source here, so the
references recorded at generation are measured by the code that scores agents."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

_CONFIG_LINE = "CONFIG = {}\n"

CSV_FORECAST = '''"""Evaluator: RMS error of a forecast table per instance, against the held-out noisy
observations. Reads OUTPUT_DIR/<instance>/<file>: a CSV with the header given in CONFIG,
one row per query time, in the order of the query file."""

import csv
import json
import math
import os
from pathlib import Path

CONFIG = {}
HERE = Path(__file__).resolve().parent
MAX_BYTES = 5_000_000


def read_table(path, columns):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_BYTES} bytes")
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.reader(fh))
    if not rows or [c.strip() for c in rows[0]] != columns:
        raise ValueError(f"{path.name} must start with the header {','.join(columns)}")
    table = []
    for k, row in enumerate(rows[1:], start=2):
        if len(row) != len(columns):
            raise ValueError(f"{path.name} line {k}: expected {len(columns)} fields")
        try:
            values = [float(v) for v in row]
        except ValueError:
            raise ValueError(f"{path.name} line {k}: not a number") from None
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"{path.name} line {k}: non-finite value")
        table.append(values)
    return table


def score(forecast_path, truth_path):
    """RMS over every forecast value (all rows, all value columns)."""
    columns = [CONFIG["key"], *CONFIG["values"]]
    truth = read_table(truth_path, columns)
    forecast = read_table(forecast_path, columns)
    if len(forecast) != len(truth):
        raise ValueError(f"expected {len(truth)} rows, got {len(forecast)}")
    total = 0.0
    for k, (f, t) in enumerate(zip(forecast, truth)):
        if abs(f[0] - t[0]) > 1e-6 * max(1.0, abs(t[0])):
            raise ValueError(f"row {k + 1}: {CONFIG['key']} {f[0]} is not the query's {t[0]}")
        total += sum((a - b) ** 2 for a, b in zip(f[1:], t[1:]))
    return math.sqrt(total / (len(truth) * len(CONFIG["values"])))


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        try:
            value = score(output_dir / name / CONFIG["file"], truth_dir / CONFIG["file"])
            results[name] = {CONFIG["metric"]: value}
        except (ValueError, OSError) as exc:
            results[name] = {CONFIG["metric"]: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
'''

FIELD_FORECAST = '''"""Evaluator: relative L2 error of a field forecast per instance, against the held-out
noisy fields. Reads OUTPUT_DIR/<instance>/<file> (a .npy array of the truth's shape,
real and finite)."""

import json
import os
from pathlib import Path

import numpy as np

CONFIG = {}
HERE = Path(__file__).resolve().parent
MAX_BYTES = 64_000_000


def read_field(path, shape):
    if not path.is_file():
        raise ValueError(f"missing {path.parent.name}/{path.name}")
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_BYTES} bytes")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path.name} is not a readable .npy array ({exc})") from exc
    if not isinstance(array, np.ndarray) or array.shape != shape:
        raise ValueError(f"{path.name} must have shape {shape}, got "
                         f"{getattr(array, 'shape', type(array).__name__)}")
    if array.dtype.kind not in "fiu":
        raise ValueError(f"{path.name} must hold real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{path.name} holds non-finite values")
    return array


def score(forecast_path, truth_path):
    truth = np.load(truth_path, allow_pickle=False).astype(np.float64)
    forecast = read_field(forecast_path, truth.shape)
    return float(np.linalg.norm(forecast - truth) / np.linalg.norm(truth))


def run_evaluation():
    output_dir = Path(os.environ["OUTPUT_DIR"])
    results = {}
    for truth_dir in sorted((HERE / "ground_truth").iterdir()):
        name = truth_dir.name
        try:
            value = score(output_dir / name / CONFIG["file"], truth_dir / CONFIG["file"])
            results[name] = {CONFIG["metric"]: value}
        except (ValueError, OSError) as exc:
            results[name] = {CONFIG["metric"]: None, "error": str(exc)}
    return results


if __name__ == "__main__":
    print(json.dumps(run_evaluation()))
'''

SOURCES = {"csv_forecast": CSV_FORECAST, "field_forecast": FIELD_FORECAST}


def evaluator_source(kind: str, config: dict[str, Any]) -> str:
    """The evaluator program for `kind` with `config` written into its CONFIG line."""
    line = "CONFIG = " + json.dumps(config, sort_keys=True) + "\n"
    return SOURCES[kind].replace(_CONFIG_LINE, line, 1)


def load_scorer(kind: str, config: dict[str, Any]) -> Callable[[Path, Path], float]:
    """`score(forecast_path, truth_path)` of the evaluator that ships, run here."""
    namespace: dict[str, Any] = {"__name__": "naturegym_evaluator", "__file__": __file__}
    exec(compile(evaluator_source(kind, config), "<evaluator>", "exec"), namespace)  # noqa: S102
    return namespace["score"]
