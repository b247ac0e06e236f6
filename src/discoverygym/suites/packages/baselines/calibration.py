"""Calibration agents of the packages suite (see CALIBRATION in this package).

- `oracle` (privileged): writes the package's reference submission (its ground truth in
  the output format) through the ordinary `write_file` tool, then submits. It proves
  the evaluator can be passed: an exact answer scores g = +1 on an error metric. The
  runner hands it the episode itself and flags its record `privileged_agent`.
- `empty-outputs`: writes nothing and submits (every instance missing: g = -1).
- `constant`: writes a well-formed answer that holds no measurement (alpha = 0, tau =
  1 s, RV = 0 m/s at every query epoch, a zero vorticity field), so the evaluator
  measures it; for a package it does not know it writes nothing."""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ....core import EpisodeView
from .solvers import CO2_TASK, SUNSPOT_TASK


class Oracle:
    privileged = True

    def solve_privileged(self, episode) -> None:  # noqa: ANN001 - a PackageEpisode
        for path, content in episode.calibration_outputs().items():
            episode.call("write_file", {"path": path, "encoding": "base64",
                                        "content": base64.b64encode(content).decode()})
        episode.call("submit", {})

    def solve(self, view: EpisodeView) -> None:  # pragma: no cover - privileged only
        raise RuntimeError("the oracle needs the episode itself (privileged run)")


class EmptyOutputs:
    def solve(self, view: EpisodeView) -> None:
        view.call("submit", {})


def _json(key: str, value: float) -> Callable[[Path], dict[str, str]]:
    return lambda _folder: {"answer.json": json.dumps({key: value})}


def _zero_rv(folder: Path) -> dict[str, str]:
    rows = list(csv.DictReader((folder / "query.csv").open()))
    return {"predictions.csv": "time_days,instrument,rv_ms\n" + "".join(
        f"{r['time_days']},{r['instrument']},0.0\n" for r in rows)}


def _zero_field(folder: Path) -> dict[str, str]:
    info = json.loads((folder / "info.json").read_text())
    n = int(info["grid_points_per_side"])
    buffer = io.BytesIO()
    np.save(buffer, np.zeros((len(info["forecast_times"]), n, n), dtype=np.float32))
    return {"forecast.npy": base64.b64encode(buffer.getvalue()).decode()}


def _zero_series(columns: str) -> Callable[[Path], dict[str, str]]:
    def make(folder: Path) -> dict[str, str]:
        times = (folder / "query.csv").read_text().splitlines()[1:]
        return {"forecast.csv": columns + "\n" + "".join(f"{t},0.0\n" for t in times if t)}
    return make


#: task name -> the constant files of one instance, from that instance's data folder
#: (only the query epochs and the grid shape are read: the format, not the science).
CONSTANTS: dict[str, Callable[[Path], dict[str, str]]] = {
    "Infer the force law of an altered-gravity binary": _json("alpha", 0.0),
    "Measure the drag timescale of a decaying binary": _json("tau_s", 1.0),
    "Forecast held-out radial velocities of planet-hosting stars": _zero_rv,
    "Forecast the vorticity of two periodic flows": _zero_field,
    SUNSPOT_TASK: _zero_series("year,sunspots"),
    CO2_TASK: _zero_series("decimal_year,co2_ppm"),
}


class Constant:
    def solve(self, view: EpisodeView) -> None:
        ws = view.workspace()
        make = CONSTANTS.get(ws["task_name"])
        if make is None:
            from .solvers import _generated

            generated = _generated(ws["task_name"], "constant")
            if generated is not None:
                generated(view, Path(ws["DATA_DIR"]), list(ws["instances"]))
        if make is not None:
            for name in ws["instances"]:
                for filename, content in make(Path(ws["DATA_DIR"]) / "data" / name).items():
                    args = {"path": f"{name}/{filename}", "content": content}
                    if filename.endswith(".npy"):
                        args["encoding"] = "base64"
                    view.call("write_file", args)
        view.call("submit", {})


AGENTS = {
    "oracle": "discoverygym.suites.packages.baselines.calibration:Oracle",
    "empty-outputs": "discoverygym.suites.packages.baselines.calibration:EmptyOutputs",
    "constant": "discoverygym.suites.packages.baselines.calibration:Constant",
}
