"""Real time series shipped by an installed registry package, cut into disjoint blocks
(the data of `sunspot-cycle-forecast` and `mauna-loa-co2-forecast`).

Each instance sees one block of the series and forecasts the points that follow it.
The blocks do not overlap, and no instance's training block holds another instance's
forecast points, so every truth stays out of every instance's data. The source is a
checked file under `inputs/installed/<module>/...` (`D.installed`)."""

from __future__ import annotations

import csv
import datetime
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _write_csv(path: Path, header: str, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fh.write(header + "\n")
        fh.writelines(line + "\n" for line in lines)


def decimal_year(yyyymmdd: str) -> float:
    """A date written YYYYMMDD as a decimal year (Jan 1 = .0)."""
    day = datetime.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:8]))
    start = datetime.date(day.year, 1, 1)
    return day.year + (day - start).days / (datetime.date(day.year + 1, 1, 1) - start).days


def read_series(path: Path, time_format: str) -> list[tuple[float, float]]:
    """(time, value) rows of a two-column CSV with a header; rows without a value (the
    CO2 record's gaps) are left out. time_format: "year" or "yyyymmdd"."""
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    out = []
    for row in rows:
        if len(row) < 2 or not row[1].strip():
            continue
        t = float(row[0]) if time_format == "year" else decimal_year(row[0].strip())
        out.append((t, float(row[1])))
    return out


def blocks(out: Path, inputs: Path, args: dict[str, Any]) -> None:
    """args: source (under inputs/), time_format, time_column, value_column, time_digits,
    value_digits, instances {name: [train_start, train_end, forecast_start, forecast_end]}
    (times inclusive for "year"; for "yyyymmdd", years, the end year whole)."""
    series = read_series(inputs / args["source"], args["time_format"])
    time_col, value_col = args["time_column"], args["value_column"]
    tf, vf = f"{{:.{args['time_digits']}f}}", f"{{:.{args['value_digits']}f}}"
    whole_years = args["time_format"] != "year"

    def within(t: float, start: float, end: float) -> bool:
        return start <= t < end + 1 if whole_years else start <= t <= end

    for name, (a, b, c, d) in args["instances"].items():
        train = [(t, v) for t, v in series if within(t, a, b)]
        query = [(t, v) for t, v in series if within(t, c, d)]
        data = out / "data" / name
        _write_csv(data / "series.csv", f"{time_col},{value_col}",
                   (f"{tf.format(t)},{vf.format(v)}" for t, v in train))
        _write_csv(data / "query.csv", time_col, (tf.format(t) for t, _ in query))
        _write_csv(out / "ground_truth" / name / "forecast.csv", f"{time_col},{value_col}",
                   (f"{tf.format(t)},{vf.format(v)}" for t, v in query))
