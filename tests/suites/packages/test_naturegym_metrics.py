"""The metrics registry of NatureGym (issue #34): every metric's in-process scorer gives
the very number its generated evaluator gives when a package runs it, the keyed metrics
of non-forecast tasks agree with scikit-learn and SciPy, and every generated evaluator
refuses hostile outputs per instance, without crashing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from discoverygym.naturegym import metrics
from discoverygym.naturegym.format.evaluator_runner import run_evaluator
from discoverygym.naturegym.format.package import load_package


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _csv(header: str, rows: list[tuple]) -> bytes:
    return (header + "\n" + "".join(",".join(str(v) for v in r) + "\n" for r in rows)).encode()


_rng = np.random.default_rng(7)
_ITEMS = [f"item{k}" for k in range(30)]
_BINARY = [int(v) for v in _rng.random(30) < 0.4]
_VALUES = [float(v) for v in _rng.normal(size=30)]
_LABELS = [str(v) for v in _rng.integers(0, 3, 30)]


def _keyed(name: str, function: str, key: str) -> dict:
    return {"name": name, "function": function, "direction": "higher_is_better",
            "unit": "", "output": {"file": "answer.csv", "keys": ["item"], "key": key}}


def _keyed_answer(key: str, values) -> dict[str, bytes]:
    # reversed rows: a keyed answer may come in any order
    return {"answer.csv": _csv(f"item,{key}", list(zip(_ITEMS, values, strict=True))[::-1])}


#: metric function -> (M, truth files, named outputs, one of them refused)
CASES = {
    "json_absolute_error": (
        {"name": "abs_err", "function": "json_absolute_error", "direction": "lower_is_better",
         "output": {"file": "answer.json", "key": "alpha"}},
        {"answer.json": b'{"alpha": 0.123456789}'},
        {"close": {"answer.json": b'{"alpha": 0.1}'},
         "refused": {"answer.json": b'{"alpha": NaN}'}}),
    "json_relative_error": (
        {"name": "rel_err", "function": "json_relative_error", "direction": "lower_is_better",
         "output": {"file": "answer.json", "key": "tau"}},
        {"answer.json": b'{"tau": 3.3}'},
        {"close": {"answer.json": b'{"tau": 3.1}'},
         "refused": {"answer.json": b'{"tau": -1}'}}),
    "csv_rms_error": (
        {"name": "rms", "function": "csv_rms_error", "direction": "lower_is_better",
         "output": {"file": "p.csv", "key": "rv", "keys": ["t", "inst"],
                    "numeric_keys": ["t"]}},
        {"p.csv": b"t,inst,rv\n1.0,A,0.5\n2.0,B,0.25\n"},
        {"close": {"p.csv": b"t,inst,rv\n1.0,A,0.4\n2.0,B,0.3\n"},
         "refused": {"p.csv": b"t,inst,rv\n1.0,A,0.4\n"}}),
    "csv_forecast_rms_error": (
        {"name": "rms_au", "function": "csv_forecast_rms_error",
         "direction": "lower_is_better",
         "output": {"file": "forecast.csv", "key": "time_days", "values": ["x", "y"]}},
        {"forecast.csv": b"time_days,x,y\n10,0.5,0.25\n20,0.5,0.5\n"},
        {"close": {"forecast.csv": b"time_days,x,y\n10,0.4,0.2\n20,0.61,0.5\n"},
         "refused": {"forecast.csv": b"time_days,x,y\n10,0.4,0.2\n21,0.61,0.5\n"}}),
    "npy_relative_l2_error": (
        {"name": "rel_l2", "function": "npy_relative_l2_error",
         "direction": "lower_is_better", "output": {"file": "f.npy"}},
        {"f.npy": _npy(np.arange(12.0).reshape(3, 4))},
        {"close": {"f.npy": _npy(np.arange(12.0).reshape(3, 4) + 0.1)},
         "refused": {"f.npy": _npy(np.zeros((4, 3)))}}),
    "csv_classification_accuracy": (
        _keyed("accuracy", "csv_classification_accuracy", "label"),
        _keyed_answer("label", _LABELS),
        {"close": _keyed_answer("label", ["0"] * 10 + _LABELS[10:]),
         "refused": _keyed_answer("label", [""] + _LABELS[1:])}),
    "csv_auroc": (
        _keyed("auroc", "csv_auroc", "score"), _keyed_answer("score", _BINARY),
        {"close": _keyed_answer("score", [b + v for b, v in zip(_BINARY, _VALUES, strict=True)]),
         "refused": _keyed_answer("score", ["inf"] + _VALUES[1:])}),
    "csv_average_precision": (
        _keyed("ap", "csv_average_precision", "score"), _keyed_answer("score", _BINARY),
        {"close": _keyed_answer("score", [round(b + v, 1) for b, v in
                                          zip(_BINARY, _VALUES, strict=True)]),
         "refused": _keyed_answer("score", ["x"] + _VALUES[1:])}),
    "csv_spearman": (
        _keyed("rho", "csv_spearman", "value"), _keyed_answer("value", _VALUES),
        {"close": _keyed_answer("value", [round(v + w, 1) for v, w in
                                          zip(_VALUES, _VALUES[::-1], strict=True)]),
         "refused": {"answer.csv": _csv("item,value", list(zip(_ITEMS, _VALUES, strict=True))[:-1])}}),
    "csv_adjusted_rand": (
        _keyed("ari", "csv_adjusted_rand", "cluster"), _keyed_answer("cluster", _LABELS),
        {"close": _keyed_answer("cluster", [f"c{v}" for v in _LABELS[:20]] + ["x"] * 10),
         "refused": {"answer.csv": _csv("item,cluster",
                                        list(zip(_ITEMS + ["item0"], _LABELS + ["1"], strict=True)))}}),
}


def test_every_metric_has_a_case():
    assert set(CASES) == set(metrics.METRICS)


def _package(tmp_path: Path, m: dict, truth: dict[str, bytes], names: list[str]) -> Path:
    root = tmp_path / "pkg"
    for name in names:
        (root / "evaluation/ground_truth" / name).mkdir(parents=True)
        for file, content in truth.items():
            (root / "evaluation/ground_truth" / name / file).write_bytes(content)
    (root / "evaluation/evaluator.py").write_text(metrics.evaluator_source(m))
    (root / "problem").mkdir()
    (root / "metadata.json").write_text(json.dumps({
        "task_name": "t", "performance_entries": [{"dataset_name": name, "metrics": [{
            "name": m["name"], "is_primary": True, "metric_direction": m["direction"],
            "sota_score": [{"value": "0.5"}]}]} for name in names]}))
    return root


@pytest.mark.parametrize("function", sorted(CASES))
def test_the_in_process_scorer_gives_the_generated_evaluators_numbers(function, tmp_path):
    m, truth, outputs = CASES[function]
    outputs = {"truth": truth, **outputs}
    in_process = metrics.score_outputs(m, truth, outputs)
    root = _package(tmp_path, m, truth, list(outputs))
    out = tmp_path / "outputs"
    for name, files in outputs.items():
        (out / name).mkdir(parents=True)
        for file, content in files.items():
            (out / name / file).write_bytes(content)
    result = run_evaluator(load_package(root), out)
    assert result.ok, result.error
    for name in outputs:
        evaluated = result.raw[name][m["name"]]
        if name == "refused":
            assert evaluated is None and isinstance(in_process[name], str)
            assert in_process[name] == result.raw[name]["error"]
        else:
            assert isinstance(evaluated, float) and in_process[name] == evaluated  # exact
    assert in_process["truth"] == (0.0 if m["direction"] == "lower_is_better" else 1.0)
    assert in_process["close"] != in_process["truth"]
    assert metrics.score_one(m, truth, outputs["close"]) == in_process["close"]
    with pytest.raises(metrics.ScoreError):
        metrics.score_one(m, truth, outputs["refused"])


def _keyed_score(function: str, key: str, truth_values, predicted) -> float:
    m = _keyed("x", function, key)
    return metrics.score_one(m, _keyed_answer(key, truth_values),
                             _keyed_answer(key, predicted))


@pytest.mark.parametrize("seed", range(5))
def test_the_keyed_metrics_agree_with_scikit_learn_and_scipy(seed):
    from scipy.stats import spearmanr
    from sklearn.metrics import (
        accuracy_score,
        adjusted_rand_score,
        average_precision_score,
        roc_auc_score,
    )

    rng = np.random.default_rng(seed)
    n = len(_ITEMS)
    binary = (rng.random(n) < 0.3).astype(int)
    binary[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + binary, 1)  # ties on purpose
    true_labels = rng.integers(0, 4, n)
    predicted_labels = np.where(rng.random(n) < 0.6, true_labels, rng.integers(0, 4, n))
    values = rng.normal(size=n)
    guesses = np.round(values + rng.normal(size=n), 1)

    def same(a: float, b: float) -> None:
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12)

    same(_keyed_score("csv_classification_accuracy", "label",
                      [str(v) for v in true_labels], [str(v) for v in predicted_labels]),
         accuracy_score(true_labels, predicted_labels))
    same(_keyed_score("csv_auroc", "score", binary, scores), roc_auc_score(binary, scores))
    same(_keyed_score("csv_average_precision", "score", binary, scores),
         average_precision_score(binary, scores))
    same(_keyed_score("csv_spearman", "value", values, guesses),
         spearmanr(values, guesses).statistic)
    same(_keyed_score("csv_adjusted_rand", "cluster", [f"t{v}" for v in true_labels],
                      [f"p{v}" for v in predicted_labels]),
         adjusted_rand_score(true_labels, predicted_labels))
    # constant answers: no skill (a constant ranking ties everything)
    same(_keyed_score("csv_auroc", "score", binary, [0.0] * n), 0.5)
    same(_keyed_score("csv_spearman", "value", values, [1.0] * n), 0.0)
    same(_keyed_score("csv_adjusted_rand", "cluster", [str(v) for v in true_labels],
                      ["a"] * n), 0.0)


_HOSTILE = [
    (b"item,label\n", "items of the query have no row"),
    (b"item,wrong\nitem0,1\n", "header"),
    (b"item,label\n" + b"".join(f"item{k},a\n".encode() for k in range(30)) + b"item0,b\n",
     "repeated"),
    (b"item,label\n" + b"".join(f"item{k},a\n".encode() for k in range(30)) + b"zz,b\n",
     "not in the query"),
    (b"item,label\nitem0,a,b\n", "expected 2 fields"),
    (b"item,label\nitem0," + b"a" * 300 + b"\n", "label of 1 to"),
    (b"item,label\nitem0,\x00\n", "have no row"),  # a NUL is a strange label, no crash
    (b"item,label\nitem0," + b"a" * 200_000 + b"\n", "readable CSV"),
    (b"item,label\n" + b"item0,a\n" * 700_000, "larger than"),
    (b"\xff\xfe\x00garbage", "header"),
]


@pytest.mark.parametrize("content, fragment", _HOSTILE)
def test_the_keyed_evaluators_refuse_hostile_outputs(content, fragment):
    m = _keyed("accuracy", "csv_classification_accuracy", "label")
    with pytest.raises(metrics.ScoreError, match=fragment):
        metrics.score_one(m, _keyed_answer("label", _LABELS), {"answer.csv": content})


@pytest.mark.parametrize("text", ["nan", "1e400", "-inf", "ten"])
def test_a_keyed_score_must_be_a_finite_number(text):
    m = _keyed("auroc", "csv_auroc", "score")
    answer = _csv("item,score", [(i, text if k == 3 else 0.5) for k, i in enumerate(_ITEMS)])
    with pytest.raises(metrics.ScoreError, match="number|non-finite"):
        metrics.score_one(m, _keyed_answer("score", _BINARY), {"answer.csv": answer})


def test_a_missing_output_is_refused():
    m, truth, _ = CASES["csv_spearman"]
    assert "missing" in metrics.score_outputs(m, truth, {"none": {}})["none"]


def test_the_in_process_scorer_leaves_the_environment_alone(monkeypatch):
    import os

    monkeypatch.setenv("OUTPUT_DIR", "/nonexistent-output-dir")
    m, truth, outputs = CASES["csv_forecast_rms_error"]
    assert isinstance(metrics.score_outputs(m, truth, outputs)["close"], float)
    assert os.environ["OUTPUT_DIR"] == "/nonexistent-output-dir"


def test_the_trivial_answer_of_each_keyed_metric_is_well_formed(tmp_path):
    for function, (m, truth, _) in CASES.items():
        if function not in metrics.KEYED:
            continue
        (tmp_path / function).mkdir()
        (tmp_path / function / "answer.csv").write_bytes(truth["answer.csv"])
        trivial = metrics.METRICS[function].trivial(m, tmp_path / function)
        value = metrics.score_one(m, truth, trivial)
        assert value <= 0.5, function  # no skill
