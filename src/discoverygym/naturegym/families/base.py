"""What a generated family is: a simulator draw per instance, with the outputs of three
references run on that same instance (a baseline, a frozen state of the art, and the
oracle whose score is the bound). The references' scores are never typed by a family:
the gates and the redraw rule evaluate each role's outputs through the metric registry,
the same code the generated evaluator runs (`naturegym.metrics.score_outputs`)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: The three references every instance records, by role (the bound is the oracle's
#: score).
REFERENCE_ROLES = ("baseline", "sota", "bound")
#: The outputs every draw carries, by role: the baseline method, the frozen SOTA (at full
#: precision) and the oracle (the true model and parameters, without the noise).
OUTPUT_ROLES = ("baseline", "sota", "oracle")
#: NatureBench's six domains; a family's `domain` is one of them (the record's
#: primary_domain).
DOMAINS = ("protein biology", "cellular omics", "physical modeling", "molecular design",
           "relational reasoning", "biomedical modeling")
#: The task types a family may declare.
TASK_TYPES = ("regression", "forecasting", "classification", "clustering", "ranking")


#: Distribution names whose import name differs (for `Family.missing_modules`).
IMPORT_NAMES = {"scikit-learn": "sklearn", "biopython": "Bio", "pyyaml": "yaml",
                "python-igraph": "igraph", "pillow": "PIL"}


class ExtraMissing(RuntimeError):
    """A family's libraries are not installed (one line naming its extra)."""


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
    the output format), every hidden generator value, and the output files of each
    reference role (OUTPUT_ROLES) as an agent would write them.

    - "baseline": the baseline method run on `data`;
    - "sota": the frozen SOTA run on `data`, floats written at full precision (repr or
      '.17g'), so the SOTA's own outputs score g = 0 exactly;
    - "oracle": the true generative model with its true parameters, without the noise
      realisation: what the best possible method scores (the bound)."""

    data: dict[str, bytes]
    truth: dict[str, bytes]
    hidden: dict[str, float]
    outputs: dict[str, dict[str, bytes]]  # role -> {file name: bytes}
    floor: float  # the noise level the metric cannot go below on average
    extra: dict[str, Any] = field(default_factory=dict)


class Family:
    """A family of generated packages. Subclasses set the class attributes and `draw`."""

    name: str = ""
    #: one of DOMAINS (written as the record's primary_domain)
    domain: str = "physical modeling"
    #: one of TASK_TYPES
    task_type: str = "forecasting"
    #: the pyproject extra its libraries come from (None: core dependencies suffice)
    extra: str | None = None
    #: the published method the frozen SOTA implements (authors, year, venue), for the
    #: metadata; never named in problem/ (its identifiers go in sota_identifiers)
    sota_citation: str = ""
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

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The draw's `data` and `hidden` as `draw(rng)` makes them (same random stream,
        same values), the references possibly left out (`outputs` may be empty): what
        the leak gate reads, hundreds of times. Override when the references cost."""
        return self.draw(rng)

    def missing_modules(self) -> list[str]:
        """The Python modules of `libraries` this environment cannot import (their
        extra is not installed)."""
        import importlib.util

        missing = []
        for library in self.libraries:
            module = IMPORT_NAMES.get(library, library).replace("-", "_")
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing

    def require_libraries(self) -> None:
        """ExtraMissing (one line naming the extra) when a library is not installed."""
        missing = self.missing_modules()
        if missing:
            extra = f"discoverygym[{self.extra}]" if self.extra else "discoverygym"
            raise ExtraMissing(f"family {self.name} needs {', '.join(missing)}: "
                               f"pip install '{extra}'")

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        """The baseline reference run by an agent on one instance's data folder: the
        output files it writes (for the scripted `baseline` agent)."""
        raise NotImplementedError

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        """A well-formed answer that measures nothing (for the `constant` agent)."""
        raise NotImplementedError

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """The no-science predictors that apply to this task's format, by name, each a
        well-formed answer computed without modelling: any of "constant",
        "training-mean", "persistence", "nearest-neighbour", plus any obvious shortcut
        of the format ("majority-class", "degree-ranking", ...). "copy-development" is
        generic (the no-science gate copies the development truth) and is not listed
        here. Subclasses extend this; the default is the constant answer."""
        return {"constant": self.constant_outputs(data_dir)}


#: The CSV float format of a reference's outputs at full precision (the SOTA's: its own
#: outputs must score exactly the recorded SOTA value).
FULL_PRECISION = "{!r}"


def csv_bytes(header: list[str], columns: list[np.ndarray], fmt: str = "{:.9e}") -> bytes:
    """A CSV table with fixed float formatting (byte-for-byte reproducible)."""
    lines = [",".join(header)]
    for row in zip(*columns, strict=True):
        lines.append(",".join(fmt.format(float(v)) for v in row))  # float(): repr of a plain float
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
