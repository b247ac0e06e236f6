"""Real radial-velocity series with a random fifth of the epochs held out (the data of
`rv-holdout-forecast`). The source series are checked files under `inputs/`."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np


def _write_csv(path: Path, header: str, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fh.write(header + "\n")
        fh.writelines(line + "\n" for line in lines)


def holdout(out: Path, inputs: Path, args: dict[str, Any]) -> None:
    """args: seed, held_fraction, min_train_per_instrument, systems {name: source CSV
    under inputs/ (time_jd, rv_ms, err_ms, instrument)}; drawn in the order given. Times
    are shifted to start at 0."""
    rng = np.random.default_rng(args["seed"])
    for name, source in args["systems"].items():
        with (inputs / source).open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        t = np.array([float(r["time_jd"]) for r in rows])
        rv = np.array([float(r["rv_ms"]) for r in rows])
        err = np.array([float(r["err_ms"]) for r in rows])
        inst = np.array([r["instrument"] for r in rows])
        held = rng.random(len(t)) < args["held_fraction"]
        for lab in set(inst):  # every instrument keeps enough training epochs
            idx = np.flatnonzero(inst == lab)
            if (~held[idx]).sum() < args["min_train_per_instrument"]:
                held[idx] = False
        t0 = t.min()
        data = out / "data" / name
        _write_csv(data / "rv_train.csv", "time_days,rv_ms,err_ms,instrument",
                   (f"{t[k] - t0:.6f},{rv[k]:.5f},{err[k]:.5f},{inst[k]}"
                    for k in np.flatnonzero(~held)))
        _write_csv(data / "query.csv", "time_days,instrument",
                   (f"{t[k] - t0:.6f},{inst[k]}" for k in np.flatnonzero(held)))
        _write_csv(out / "ground_truth" / name / "predictions.csv", "time_days,instrument,rv_ms",
                   (f"{t[k] - t0:.6f},{inst[k]},{rv[k]:.5f}" for k in np.flatnonzero(held)))
