"""Ignition delay of hydrogen/air under a perturbed kinetic mechanism (Cantera).

A premixed hydrogen/air mixture ignites in an adiabatic constant-volume reactor
(Cantera's IdealGasReactor) at a drawn initial temperature, pressure and equivalence
ratio. The "true" chemistry is the hydrogen/oxygen subset of GRI-Mech 3.0 shipped with
Cantera (`h2o2.yaml`) with four hidden rate-constant multipliers: the chain-branching
step H + O2 <=> O + OH, the third-body recombination H + O2 + M <=> HO2 + M (every
collider), H + HO2 <=> 2 OH and 2 OH (+M) <=> H2O2 (+M). Each multiplier is drawn
away from 1 (|ln f| of 0.05-0.15 for the chain branching, 0.15-0.4 for the
others), as if the published rates were off by the amounts kinetic
reviews report. The agent sees measured ignition delays (log-normal scatter of a
stated size) at some conditions and predicts the delays at others.

- metric: RMS of predicted minus measured log10(delay / s) over the query conditions
  (the truth is the held-out noisy measurements, so the metric has a floor: the
  scatter);
- baseline: an Arrhenius correlation log10 tau = a + b / T fitted to the data by least
  squares (pressure and composition ignored);
- state of the art: the published mechanism, unperturbed (GRI-Mech 3.0, Smith et al.
  1999; its H2/O2 subset in Cantera, Goodwin et al.), run at the query conditions;
- oracle: the perturbed mechanism (the true multipliers), without the scatter.

Why valid: the multipliers are hidden and drawn per instance, so the truth is not
computable from public code; the conditions, their number and the scatter are drawn
independently of the multipliers; the perturbed steps act differently across the
explosion-limit crossover, so no global offset fixes the published mechanism, and
fitting the multipliers to the data (the discovery the task asks for) recovers the
oracle."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np

from ..base import FULL_PRECISION, Draw, Family, Metric, Reference, read_csv_columns

MECHANISM = "h2o2.yaml"
#: the perturbed steps: name -> the equations whose pre-exponential factor it scales
PERTURBED_STEPS: dict[str, tuple[str, ...]] = {
    "chain_branching": ("H + O2 <=> O + OH",),
    "third_body_recombination": ("H + O2 + M <=> HO2 + M", "H + O2 + O2 <=> HO2 + O2",
                                 "H + O2 + H2O <=> HO2 + H2O", "H + O2 + N2 <=> HO2 + N2",
                                 "H + O2 + AR <=> HO2 + AR"),
    "hydroperoxyl_branching": ("H + HO2 <=> 2 OH",),
    "peroxide_recombination": ("2 OH (+M) <=> H2O2 (+M)",),
}
#: |ln multiplier| of each step is drawn uniformly in its range, with a random sign (the
#: chain-branching rate is the best known and the most sensitive: a narrower range)
LOG_MULTIPLIER_RANGE = {"chain_branching": (0.05, 0.15), "third_body_recombination": (0.15, 0.4),
                        "hydroperoxyl_branching": (0.15, 0.4),
                        "peroxide_recombination": (0.15, 0.4)}
TEMPERATURE_K = (1000.0, 1400.0)
PRESSURE_ATM = (1.0, 20.0)  # drawn log-uniformly
EQUIVALENCE_RATIO = (0.5, 2.0)
SCATTER_LOG10 = (0.02, 0.05)  # the measurement scatter's standard deviation in log10
N_MEASURED = (20, 32)  # how many measured conditions an instance gives (inclusive)
N_QUERY = 12
IGNITION_RISE_K = 400.0  # the delay is the time the temperature first rises this much
MAX_TIME_S = 1.0
KEYS = ["temperature_K", "pressure_atm", "equivalence_ratio"]
VALUE = "log10_delay_s"
SOLVER_VERSION = "cantera-ideal-gas-reactor/rise-400K/rtol1e-9"

_README = """# Predict the ignition delay of hydrogen/air mixtures

## Scientific problem

Premixed hydrogen/air mixtures (air taken as O2 + 3.76 N2) are heated suddenly to an
initial temperature and pressure and held at constant volume, with no heat loss, until
they ignite. The ignition delay is the time from the start until the temperature has
risen by 400 K. Each series of experiments was measured on one apparatus whose results
scatter log-normally, with a stated scatter. Which elementary reaction rates govern
these mixtures, and how well the rates in the literature describe them, is for you to
judge.

## Task objective

For each series, predict the ignition delay at the query conditions.

## Dataset information

`data/<series>/measured.csv`: the measured conditions (initial temperature in K,
pressure in atm, equivalence ratio) and the base-10 logarithm of the measured delay in
seconds; `data/<series>/query.csv`: the conditions to predict;
`data/<series>/info.json`: the scatter and the mixture. See `data_description.md`.

## Evaluation metrics

Root-mean-square error of the predicted log10(delay / s) against held-out measurements
at the query conditions, which carry the same scatter as the data (lower is better),
compared with a reference value per series.

## Output format

For each series write `<OUTPUT_DIR>/<series>/prediction.csv` with the header
`temperature_K,pressure_atm,equivalence_ratio,log10_delay_s` and one row per query
condition, in the order of `query.csv`, the condition columns copied from it.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a condition that is not
the query's or a non-finite value counts as a failure for that series. You may ask for
an evaluation of your current outputs.
"""

_DATA = """# Data

Each folder under `data/` is one series of experiments; `{dev}` is the development
series (`evaluate` scores only it; the result is computed on the others).

- `measured.csv`: columns `temperature_K,pressure_atm,equivalence_ratio,log10_delay_s`,
  one row per measured condition.
- `query.csv`: columns `temperature_K,pressure_atm,equivalence_ratio`, the conditions
  whose delays are held out.
- `info.json`: `scatter_log10` (the standard deviation of the measurements' log10
  scatter; the held-out measurements carry the same), `fuel`, `oxidiser`,
  `ignition_rise_K`.
"""


def _cantera():
    try:
        import cantera
    except ImportError as exc:
        raise ImportError("the ignition-delay family needs the 'chem' extra "
                          "(pip install 'discoverygym[chem]')") from exc
    return cantera


def _solution(log_multipliers: dict[str, float]):
    """The mechanism with each perturbed step's rate scaled by exp(log multiplier)."""
    ct = _cantera()
    gas = ct.Solution(MECHANISM)
    equations = [r.equation for r in gas.reactions()]
    for step, value in log_multipliers.items():
        for equation in PERTURBED_STEPS[step]:
            gas.set_multiplier(math.exp(value), equations.index(equation))
    return gas


def ignition_delays(conditions: np.ndarray, log_multipliers: dict[str, float] | None = None
                    ) -> np.ndarray:
    """Ignition delay (s) at each row (T / K, P / atm, phi) of `conditions`: the time the
    temperature of an adiabatic constant-volume reactor first rises IGNITION_RISE_K above
    its start, interpolated linearly between the integrator's steps (NaN if it does not
    within MAX_TIME_S)."""
    ct = _cantera()
    gas = _solution(log_multipliers or {})
    delays = []
    for temperature, pressure, phi in np.asarray(conditions, float):
        gas.set_equivalence_ratio(phi, "H2", "O2:1.0, N2:3.76")
        gas.TP = temperature, pressure * ct.one_atm
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            reactor = ct.IdealGasReactor(gas, clone=False)
        network = ct.ReactorNet([reactor])
        network.rtol, network.atol = 1e-9, 1e-15
        target = temperature + IGNITION_RISE_K
        t_prev, temp_prev, delay = 0.0, temperature, math.nan
        while network.time < MAX_TIME_S:
            network.step()
            if reactor.T >= target:
                delay = t_prev + (network.time - t_prev) * (target - temp_prev) / (
                    reactor.T - temp_prev)
                break
            t_prev, temp_prev = network.time, reactor.T
        delays.append(delay)
    return np.array(delays)


def draw_conditions(rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` conditions (T, P, phi), rounded as a laboratory writes them."""
    temperature = np.round(rng.uniform(*TEMPERATURE_K, n), 1)
    pressure = np.round(np.exp(rng.uniform(*np.log(PRESSURE_ATM), n)), 3)
    phi = np.round(rng.uniform(*EQUIVALENCE_RATIO, n), 3)
    return np.column_stack([temperature, pressure, phi])


def arrhenius_fit(conditions: np.ndarray, log10_delay: np.ndarray):
    """The baseline: log10 tau = a + b / T by least squares; returns a predictor."""
    design = np.column_stack([np.ones(len(conditions)), 1000.0 / conditions[:, 0]])
    coef, *_ = np.linalg.lstsq(design, log10_delay, rcond=None)
    return lambda c: coef[0] + coef[1] * 1000.0 / np.asarray(c, float)[:, 0]


def nearest_neighbour(conditions: np.ndarray, log10_delay: np.ndarray, query: np.ndarray
                      ) -> np.ndarray:
    """Copy the delay of the measured condition nearest in (1000/T, ln P, phi)."""
    def features(c):
        c = np.asarray(c, float)
        return np.column_stack([1000.0 / c[:, 0], np.log(c[:, 1]), c[:, 2]])

    known, asked = features(conditions), features(query)
    scale = known.std(axis=0) + 1e-12
    distance = (((asked[:, None, :] - known[None, :, :]) / scale) ** 2).sum(axis=2)
    return np.asarray(log10_delay)[np.argmin(distance, axis=1)]


def _table(conditions: np.ndarray, values: np.ndarray | None, fmt: str) -> bytes:
    """A CSV of the conditions (as drawn: 1, 3, 3 decimals) and optionally the delays."""
    header = KEYS + ([VALUE] if values is not None else [])
    lines = [",".join(header)]
    for k, (t, p, phi) in enumerate(conditions):
        row = [f"{t:.1f}", f"{p:.3f}", f"{phi:.3f}"]
        if values is not None:
            row.append(fmt.format(float(values[k])))
        lines.append(",".join(row))
    return ("\n".join(lines) + "\n").encode()


def prediction_bytes(query: np.ndarray, values: np.ndarray) -> bytes:
    """An answer file at full precision (so the SOTA's own answer scores g = 0)."""
    return _table(query, values, FULL_PRECISION)


def _read(data_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    measured = read_csv_columns(data_dir / "measured.csv")
    query = read_csv_columns(data_dir / "query.csv")
    return (np.column_stack([measured[k] for k in KEYS]), measured[VALUE],
            np.column_stack([query[k] for k in KEYS]))


class IgnitionDelay(Family):
    name = "ignition-delay"
    version = "1"
    task_name = "Predict hydrogen/air ignition delays under uncertain kinetics"
    sub_domain = "chemical kinetics"
    tags = ("combustion", "chemical kinetics", "regression", "naturegym")
    libraries = ("numpy", "cantera")
    domain = "physical modeling"
    task_type = "regression"
    extra = "chem"
    sota_citation = ("GRI-Mech 3.0 (Smith, Golden, Frenklach, Moriarty, Eiteneer, "
                     "Goldenberg, Bowman, Hanson, Song, Gardiner, Lissianski, Qin, 1999), "
                     "its H2/O2 subset as shipped with Cantera (Goodwin et al.)")
    metric = Metric("rms_log10_delay_error", "log10(s)",
                    "RMS of predicted minus held-out measured log10(ignition delay / s) "
                    "over the query conditions")
    metric_function = "csv_rms_error"
    metric_output = {"file": "prediction.csv", "key": VALUE, "keys": KEYS,
                     "numeric_keys": KEYS, "query": "query.csv"}
    sota_identifiers = ("h2o2.yaml", "gri30", "GRI-Mech", "ignition_delays")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("Arrhenius correlation",
                              "log10 tau = a + b / T fitted to the measured delays by least "
                              "squares (pressure and composition ignored)"),
        "sota": Reference("the published mechanism",
                          "GRI-Mech 3.0's H2/O2 subset (Cantera's h2o2.yaml, Smith et al. "
                          "1999) in an adiabatic constant-volume reactor at each query "
                          "condition, rates as published", SOLVER_VERSION),
        "bound": Reference("the perturbed mechanism",
                           "the mechanism with the hidden rate multipliers, without the "
                           "measurement scatter; its error is the scatter"),
    }

    def draw(self, rng: np.random.Generator) -> Draw:
        return self._draw(rng, references=True)

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The data and hidden values only (the leak gate's hundreds of draws): the
        measured conditions are simulated, the query's truths and the references not."""
        return self._draw(rng, references=False)

    def _draw(self, rng: np.random.Generator, *, references: bool) -> Draw:
        log_multipliers = {
            step: float(rng.choice([-1.0, 1.0]) * rng.uniform(*LOG_MULTIPLIER_RANGE[step]))
            for step in PERTURBED_STEPS}
        n_measured = int(rng.integers(N_MEASURED[0], N_MEASURED[1] + 1))
        scatter = round(float(rng.uniform(*SCATTER_LOG10)), 4)
        conditions = draw_conditions(rng, n_measured + N_QUERY)
        simulated = conditions if references else conditions[:n_measured]
        true_log = np.log10(ignition_delays(simulated, log_multipliers))
        if not np.all(np.isfinite(true_log)):
            raise FloatingPointError("a mixture did not ignite")
        noise = rng.normal(0.0, scatter, len(conditions))[:len(simulated)]
        # the values as the files write them (so the data and the draw agree to the bit)
        noisy = np.array([float(f"{v:.4f}") for v in true_log + noise])
        measured, query = conditions[:n_measured], conditions[n_measured:]
        info = {"scatter_log10": scatter, "fuel": "H2", "oxidiser": "O2:1, N2:3.76",
                "ignition_rise_K": IGNITION_RISE_K}
        draw = Draw(
            data={"measured.csv": _table(measured, noisy[:n_measured], "{:.4f}"),
                  "query.csv": _table(query, None, ""),
                  "info.json": (json.dumps(info, sort_keys=True, indent=1) + "\n").encode()},
            truth={}, hidden={f"log_multiplier_{k}": v for k, v in log_multipliers.items()},
            outputs={}, floor=scatter)
        if references:
            published = np.log10(ignition_delays(query))
            baseline = arrhenius_fit(measured, noisy[:n_measured])(query)
            draw.truth = {"prediction.csv": _table(query, noisy[n_measured:], "{:.4f}")}
            draw.outputs = {
                "baseline": {"prediction.csv": prediction_bytes(query, baseline)},
                "sota": {"prediction.csv": prediction_bytes(query, published)},
                "oracle": {"prediction.csv": prediction_bytes(query, true_log[n_measured:])}}
        return draw

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        measured, values, query = _read(data_dir)
        return {"prediction.csv": prediction_bytes(query, arrhenius_fit(measured,
                                                                         values)(query))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        _, _, query = _read(data_dir)
        return {"prediction.csv": prediction_bytes(query, np.full(len(query), -3.0))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        measured, values, query = _read(data_dir)
        return {
            "constant": self.constant_outputs(data_dir),
            "training-mean": {"prediction.csv": prediction_bytes(
                query, np.full(len(query), float(np.mean(values))))},
            "nearest-neighbour": {"prediction.csv": prediction_bytes(
                query, nearest_neighbour(measured, values, query))},
        }
