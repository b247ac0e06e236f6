"""What a generated family is: a simulator draw per instance, with three references run
on that same instance (a baseline, a frozen state of the art, a privileged bound)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: The three references every instance records, by role.
REFERENCE_ROLES = ("baseline", "sota", "bound")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    description: str
    direction: str = "lower_is_better"


@dataclass(frozen=True)
class Reference:
    """How a reference is obtained (the same for every instance of a family)."""

    method: str
    detail: str
    code_version: str = ""


@dataclass
class Draw:
    """One instance: the agent's files, the truth's files (the held-out observations in
    the output format), every hidden generator value, and the references' figures."""

    data: dict[str, bytes]
    truth: dict[str, bytes]
    hidden: dict[str, float]
    scores: dict[str, float]  # role -> metric value on this instance
    floor: float  # the noise level the metric cannot go below on average
    extra: dict[str, Any] = field(default_factory=dict)


class Family:
    """A family of generated packages. Subclasses set the class attributes and `draw`."""

    name: str = ""
    version: str = ""
    task_name: str = ""
    sub_domain: str = ""
    tags: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ("numpy",)
    metric: Metric
    #: the metric's function in the metrics registry (`naturegym.metrics.METRICS`) and
    #: its output fields: the build generates the evaluator from them
    metric_function: str = "csv_forecast_rms_error"
    metric_output: dict[str, Any] = {}
    references: dict[str, Reference] = {}
    readme: str = ""
    data_description: str = ""
    #: the SOTA's code identifiers, kept out of problem/ by the record firewall
    sota_identifiers: tuple[str, ...] = ()
    #: evaluation instances per package (one development instance comes with them)
    evaluation_instances: int = 2

    @property
    def output_file(self) -> str:
        return self.metric_output["file"]

    def record_metric(self) -> dict[str, Any]:
        """The family's M part of a NatureGym record (the evaluator is generated from it
        by the metrics registry, as for every built package)."""
        return {"name": self.metric.name, "function": self.metric_function,
                "direction": self.metric.direction, "unit": self.metric.unit,
                "source_description": self.metric.description,
                "output": dict(self.metric_output)}

    def draw(self, rng: np.random.Generator) -> Draw:
        raise NotImplementedError

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        """The baseline reference run by an agent on one instance's data folder: the
        output files it writes (for the scripted `baseline` agent)."""
        raise NotImplementedError

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        """A well-formed answer that measures nothing (for the `constant` agent)."""
        raise NotImplementedError


def csv_bytes(header: list[str], columns: list[np.ndarray], fmt: str = "{:.9e}") -> bytes:
    """A CSV table with fixed float formatting (byte-for-byte reproducible)."""
    lines = [",".join(header)]
    for row in zip(*columns, strict=True):
        lines.append(",".join(fmt.format(float(v)) for v in row))
    return ("\n".join(lines) + "\n").encode()


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(a, float) - np.asarray(b, float)) ** 2)))


def read_csv_columns(path: Path) -> dict[str, np.ndarray]:
    """A numeric CSV with a header as {column: values}."""
    table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    header = path.read_text().splitlines()[0].split(",")
    return {name: table[:, k] for k, name in enumerate(header)}
