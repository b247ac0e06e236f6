"""The statistical leak gate: no hidden value may be predictable from the scaffolding of
what the agent is given.

The record firewall looks for hidden values and their names in problem/. It cannot see
a hidden value that is *derivable* from what the agent is given: a semi-major axis that
is the declared noise divided by a constant, a period that is the last observation time
divided by 2.5. This gate looks for that, statistically, over many public draws of a
family (Family.draw_data: the data and the hidden values, no reference run):

- the visible numbers of every draw (`visible_features`): each file's size, every
  number in a JSON file (declared noise levels, grids, constants), the row count of
  each CSV and, for each of its numeric columns that is a grid (monotonic) or
  constant, its first and last values and its step (a text column, such as a
  subject's id, is skipped, not the table); each array's shape. The measurements themselves
  (a CSV column that varies and is not monotonic, an array's values) are the science
  of the task, not scaffolding, and are left out: inferring an orbit's size from the
  positions is what the agent is asked to do;
- every hidden value is checked against each feature and each pairwise ratio and
  product of features (squared correlation, of the values and of their logarithms),
  and against a gradient-boosting model fitted on all features (scikit-learn,
  5-fold cross-validated R^2; a classifier's accuracy for a discrete hidden value);
- R^2 >= 0.5, or a class accuracy 10 points above the majority class's share, is a
  leak, and so is a hidden value that never varies (one public draw shows it). The
  finding names the feature."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.bounded import UnsafeInput, loads

MIN_DRAWS = 200
R2_LEAK = 0.5
CLASS_MARGIN = 0.10
#: a hidden value with at most this many distinct values is a class, not a quantity
MAX_CLASSES = 10
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


class LeakGateUnavailable(RuntimeError):
    """scikit-learn is not installed (one line naming the extra)."""


def _require_sklearn() -> None:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise LeakGateUnavailable("the leak gate needs scikit-learn: pip install "
                                  "'discoverygym[naturegym]'") from None


def _json_numbers(value: Any, path: str, out: dict[str, float], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        budget[0] -= 1
        out[path] = float(value)
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            _json_numbers(value[key], f"{path}.{key}", out, budget)
    elif isinstance(value, list):
        for k, item in enumerate(value[:64]):
            _json_numbers(item, f"{path}[{k}]", out, budget)


def _csv_features(name: str, text: str, out: dict[str, float]) -> None:
    """A CSV's row count and, for each numeric column that is a grid or constant, its
    first value, last value and step. A text column (a subject's or a molecule's name)
    is skipped, not the table: its row count and its time grid are scaffolding too."""
    try:
        lines = [row for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    except csv.Error:
        return  # not a table: its size is all we use
    if not lines:
        return
    header = [h.strip() for h in lines[0]]
    rows = lines[1:]
    out[f"{name} rows"] = float(len(rows))
    if not rows or any(len(r) != len(header) for r in rows):
        return
    for k, column in enumerate(header):
        try:
            values = np.array([float(r[k]) for r in rows])
        except ValueError:
            continue  # a text column
        steps = np.diff(values)
        if len(values) > 1 and not (np.all(steps > 0) or np.all(steps < 0)
                                    or np.all(steps == 0)):
            continue  # a measurement: the science, not scaffolding
        out[f"{name} {column} first"] = float(values[0])
        out[f"{name} {column} last"] = float(values[-1])
        if len(values) > 1:
            out[f"{name} {column} step"] = float(np.median(steps))


def visible_features(data: dict[str, bytes]) -> dict[str, float]:
    """The scaffolding numbers of one instance's files (see the module's docstring)."""
    out: dict[str, float] = {}
    for name, content in sorted(data.items()):
        out[f"{name} bytes"] = float(len(content))
        if name.endswith(".json"):
            try:
                _json_numbers(loads(content.decode("utf-8", errors="replace")), name, out,
                              [256])
            except (UnsafeInput, ValueError):
                pass
        elif name.endswith(".csv"):
            _csv_features(name, content.decode("utf-8", errors="replace"), out)
        elif name.endswith(".npy"):
            try:
                array = np.load(io.BytesIO(content), allow_pickle=False)
                for k, size in enumerate(array.shape):
                    out[f"{name} shape[{k}]"] = float(size)
            except (OSError, ValueError, EOFError):
                pass
        else:
            text = content[:100_000].decode("utf-8", errors="replace")
            for k, match in enumerate(_NUMBER.findall(text)[:64]):
                out[f"{name} number {k}"] = float(match)
    return {k: v for k, v in out.items() if math.isfinite(v)}


def _r2(a: np.ndarray, b: np.ndarray) -> float:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    r = np.corrcoef(a, b)[0, 1]
    return float(r * r) if np.isfinite(r) else 0.0


def _single_feature_r2(h: np.ndarray, features: dict[str, np.ndarray]) -> tuple[str, float]:
    """The best squared correlation of h with one feature, or with a pairwise ratio or
    product of two (values and logarithms)."""
    candidates = dict(features)
    names = sorted(features)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            with np.errstate(all="ignore"):
                candidates[f"{a} * {b}"] = features[a] * features[b]
                if np.all(features[b] != 0):
                    candidates[f"{a} / {b}"] = features[a] / features[b]
    best = ("", 0.0)
    log_h = np.log(np.abs(h)) if np.all(h != 0) else None
    for name, values in candidates.items():
        if not np.all(np.isfinite(values)):
            continue
        score = _r2(h, values)
        if log_h is not None and np.all(values != 0):
            score = max(score, _r2(log_h, np.log(np.abs(values))))
        if score > best[1]:
            best = (name, score)
    return best


@dataclass
class HiddenVerdict:
    hidden: str
    kind: str  # "constant", "class" or "quantity"
    feature: str  # the most telling feature
    single_r2: float = 0.0  # best one-feature (or pair) R^2
    model_score: float = 0.0  # cross-validated R^2, or accuracy minus chance
    leak: bool = False

    def finding(self) -> str:
        if self.kind == "constant":
            return f"{self.hidden} is the same in every draw ({self.feature})"
        if self.kind == "class":
            return (f"{self.hidden} is predicted from {self.feature or 'the visible numbers'} "
                    f"{self.model_score:+.2f} above chance")
        how = (f"R^2 = {self.single_r2:.3f} from {self.feature}"
               if self.single_r2 >= self.model_score
               else f"cross-validated R^2 = {self.model_score:.3f} by a model led by "
                    f"{self.feature}")
        return f"{self.hidden} is derivable: {how}"


@dataclass
class LeakReport:
    draws: int
    features: list[str]
    verdicts: list[HiddenVerdict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.draws >= MIN_DRAWS and not any(v.leak for v in self.verdicts)

    @property
    def findings(self) -> list[str]:
        out = [v.finding() for v in self.verdicts if v.leak]
        if self.draws < MIN_DRAWS:
            out.append(f"only {self.draws} draws (the gate needs {MIN_DRAWS})")
        return out

    @property
    def worst(self) -> float:
        """The highest R^2 (or accuracy above chance) of any hidden value."""
        return max([max(v.single_r2, v.model_score) for v in self.verdicts
                    if v.kind != "constant"] or [0.0])

    def as_dict(self) -> dict[str, Any]:
        return {"draws": self.draws, "passed": self.passed, "worst": self.worst,
                "findings": self.findings, "features": len(self.features),
                "hidden": {v.hidden: {"kind": v.kind, "feature": v.feature,
                                      "single_r2": v.single_r2,
                                      "model_score": v.model_score, "leak": v.leak}
                           for v in self.verdicts}}


def leak_report(samples: list[tuple[dict[str, bytes], dict[str, float]]]) -> LeakReport:
    """Judge (data files, hidden values) pairs, one per public draw."""
    _require_sklearn()
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
    from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score

    rows = [visible_features(data) for data, _ in samples]
    names = sorted(set.intersection(*(set(r) for r in rows))) if rows else []
    features = {n: np.array([r[n] for r in rows]) for n in names}
    varying = {n: v for n, v in features.items() if np.ptp(v) > 0}
    report = LeakReport(len(samples), sorted(varying))
    if not samples:
        return report
    matrix = (np.column_stack([varying[n] for n in report.features]) if varying
              else np.zeros((len(samples), 1)))
    hidden_names = sorted(set.intersection(*(set(h) for _, h in samples)))
    for name in hidden_names:
        h = np.array([float(hidden[name]) for _, hidden in samples])
        if not np.all(np.isfinite(h)):
            continue
        distinct = np.unique(h)
        if len(distinct) == 1:
            report.verdicts.append(HiddenVerdict(name, "constant", f"= {distinct[0]!r}",
                                                 leak=True))
            continue
        if len(distinct) <= MAX_CLASSES:
            labels = np.searchsorted(distinct, h)
            chance = float(np.bincount(labels).max() / len(labels))
            folds = min(5, int(np.bincount(labels).min()))
            score, top = 0.0, ""
            if folds >= 2 and varying:
                model = GradientBoostingClassifier(random_state=0)
                accuracy = cross_val_score(model, matrix, labels, cv=StratifiedKFold(
                    folds, shuffle=True, random_state=0)).mean()
                score = float(accuracy - chance)
                if score >= CLASS_MARGIN:
                    top = _top_feature(model.fit(matrix, labels), report.features)
            report.verdicts.append(HiddenVerdict(name, "class", top, 0.0, score,
                                                 leak=score >= CLASS_MARGIN))
            continue
        feature, single = _single_feature_r2(h, varying)
        model_r2 = 0.0
        if varying:
            model = GradientBoostingRegressor(random_state=0)
            model_r2 = float(cross_val_score(model, matrix, h, scoring="r2", cv=KFold(
                5, shuffle=True, random_state=0)).mean())
            if model_r2 > single:
                feature = _top_feature(model.fit(matrix, h), report.features)
        report.verdicts.append(HiddenVerdict(name, "quantity", feature, single, model_r2,
                                             leak=max(single, model_r2) >= R2_LEAK))
    return report


def _top_feature(model: Any, names: list[str]) -> str:
    return names[int(np.argmax(model.feature_importances_))] if names else ""


def family_samples(family: Any, key: Any, draws: int = MIN_DRAWS
                   ) -> list[tuple[dict[str, bytes], dict[str, float]]]:
    """`draws` public draws of a family's data and hidden values (Family.draw_data),
    each from its own keyed random stream; a draw the simulator refuses is skipped (at
    most `draws` of them)."""
    samples: list[tuple[dict[str, bytes], dict[str, float]]] = []
    attempt = 0
    while len(samples) < draws and attempt < 2 * draws:
        rng = np.random.default_rng(key.derive("naturegym-leak-gate/1", family.name, attempt))
        attempt += 1
        try:
            draw = family.draw_data(rng)
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):
            continue
        samples.append((draw.data, {k: float(v) for k, v in draw.hidden.items()}))
    return samples


def run_leak_gate(family: Any, key: Any, draws: int = MIN_DRAWS) -> LeakReport:
    """The leak gate on `draws` public draws of a family (LeakGateUnavailable without
    scikit-learn, before any draw)."""
    _require_sklearn()
    return leak_report(family_samples(family, key, draws))
