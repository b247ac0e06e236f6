"""Population pharmacokinetics: forecast the concentrations of new patients.

A drug is given as one oral dose. Its concentration in plasma follows the one-compartment
model with first-order absorption (the Bateman function): absorption rate ka, apparent
clearance CL and apparent volume V. Every patient has their own parameters: log-normal
inter-individual variability on all three, and a hidden covariate model on clearance,
body-weight allometry with an unknown exponent times a renal part that scales with the
creatinine clearance (CL = CL_pop (WT/70)^theta (1 - f_r + f_r CrCL/100)); the volume
scales with body weight. Plasma samples carry a stated combined (proportional and
additive) residual error, applied on the log scale (log-transform-both-sides).

The agent sees 30 to 60 training patients (dose, weight, creatinine clearance, 3 to 6
samples each at scattered times) and 10 to 20 new patients (dose, covariates, two early
samples each) and forecasts the new patients' log concentrations at later query
times. The truth is the measured (noisy) log concentrations, so the metric has a floor.

- baseline: a naive pooled fit, one parameter set for every patient (least squares of the
  log concentrations of all training samples together), ignoring individuals, covariates
  and the new patients' own samples;
- state of the art: a population (mixed-effects) fit by the iterative two-stage method
  (Steimer et al. 1984) without a covariate model, then MAP Bayesian forecasting of each
  new patient from their early samples (Sheiner, Beal, Rosenberg & Marathe 1979);
- oracle: each new patient's true parameters, without the residual error.

Why there is room above the SOTA: the early samples tell a patient's absorption, volume
and bioavailability, hardly their clearance, which sets the later concentrations. The SOTA's prior on
clearance is the whole population's spread; the covariates explain much of it, for a
method that models them.

Every visible size (patient and sample counts, times, doses, covariates) is drawn apart
from the hidden values, and every number is written with a fixed width."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize

from ..base import FULL_PRECISION, Draw, Family, Metric, Reference

# The residual error (stated in the data description): log y = log C + w eps, eps ~ N(0,
# 1), w = sqrt(PROP_SD^2 + (ADD_SD_MG_L / C)^2).
PROP_SD = 0.12
ADD_SD_MG_L = 0.002
N_TRAIN = (30, 60)
N_NEW = (10, 20)
SAMPLES_PER_TRAINING = (3, 6)
QUERIES_PER_NEW = 3
SAMPLE_WINDOW_H = (0.25, 24.0)
EARLY_WINDOWS_H = ((0.5, 2.0), (3.0, 8.0))
QUERY_WINDOW_H = (8.0, 24.0)
DOSES_MG = (100, 200, 400)
# Covariates of the population (reference values 70 kg and 100 mL/min)
WEIGHT_MEDIAN_KG, WEIGHT_LOG_SD, WEIGHT_RANGE_KG = 75.0, 0.22, (40.0, 150.0)
CRCL_MEDIAN_ML_MIN, CRCL_LOG_SD, CRCL_RANGE_ML_MIN = 80.0, 0.5, (15.0, 200.0)
REFERENCE_WEIGHT_KG, REFERENCE_CRCL_ML_MIN = 70.0, 100.0
# The frozen state of the art's settings
ITS_ITERATIONS = 12
JACOBIAN_STEP = 1e-6
MAP_STEPS = 100
SOTA_VERSION = "its-map-bayesian-forecast/1"
OUTPUT = "prediction.csv"
VALUE = "log_concentration"


def bateman(t_h: np.ndarray, dose_mg: np.ndarray, ka_per_h: np.ndarray,
            cl_l_per_h: np.ndarray, v_l: np.ndarray) -> np.ndarray:
    """Concentration (mg/L) at t_h after one oral dose, one compartment, first-order
    absorption and elimination: D ka / (V (ka - k)) (exp(-k t) - exp(-ka t)), k = CL/V,
    written with expm1 so that ka close to k (the limit D k t exp(-k t) / V) is exact."""
    t, ka, k = np.asarray(t_h, float), np.asarray(ka_per_h, float), \
        np.asarray(cl_l_per_h, float) / np.asarray(v_l, float)
    d = ka - k
    safe = np.where(d == 0.0, 1.0, d)
    shape = np.where(d == 0.0, t, -np.expm1(-d * t) / safe)
    return np.asarray(dose_mg, float) * ka / np.asarray(v_l, float) * np.exp(-k * t) * shape


def residual_sd(concentration_mg_l: np.ndarray) -> np.ndarray:
    """The sd of the log concentration's residual error at a concentration."""
    return np.sqrt(PROP_SD**2 + (ADD_SD_MG_L / np.asarray(concentration_mg_l, float))**2)


@dataclass(frozen=True)
class Subjects:
    """A cohort: ids, dose (mg), weight (kg), creatinine clearance (mL/min)."""

    ids: list[str]
    dose_mg: np.ndarray
    weight_kg: np.ndarray
    crcl_ml_min: np.ndarray


@dataclass(frozen=True)
class Samples:
    """Samples of a cohort: the row's subject index, time (h), concentration (mg/L)."""

    subject: np.ndarray
    time_h: np.ndarray
    concentration_mg_l: np.ndarray


# -- the model's fits: parameters are log(ka), log(CL), log(V) -------------------------


def _log_prediction(theta: np.ndarray, t_h: np.ndarray, dose_mg: np.ndarray) -> np.ndarray:
    c = bateman(t_h, dose_mg, np.exp(theta[..., 0]), np.exp(theta[..., 1]),
                np.exp(theta[..., 2]))
    return np.log(np.maximum(c, 1e-300))


def pooled_fit(samples: Samples, dose_mg: np.ndarray) -> np.ndarray:
    """The naive pooled fit: one (log ka, log CL, log V) for every sample of every
    subject, by weighted least squares of the log concentrations (the baseline), the
    better of two starts (ka above and below the elimination rate: the Bateman function
    takes the same shape with ka and k swapped and V rescaled: the flip-flop)."""
    t, d = samples.time_h, dose_mg[samples.subject]
    y = np.log(samples.concentration_mg_l)
    w = residual_sd(samples.concentration_mg_l)
    best = None
    for start in (np.log([0.5, 3.0, 40.0]), np.log([2.0, 3.0, 40.0])):  # slow, fast absorption
        fit = optimize.least_squares(
            lambda th: (y - _log_prediction(th, t, d)) / w, start, method="lm")
        if best is None or fit.cost < best.cost:
            best = fit
    return best.x


def map_estimates(samples: Samples, dose_mg: np.ndarray, mean: np.ndarray,
                  omega: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum a posteriori parameters of every subject (Sheiner et al. 1979): for
    each, minimise sum ((log y - log C(theta)) / w)^2 + (theta - mean)' Omega^-1 (theta -
    mean), w the stated residual sd at the measured concentration (`mean`: one prior
    mean for all, or one per subject, subjects x 3). The subjects are
    independent 3-parameter problems, solved together by Levenberg-Marquardt steps on
    their stacked 3 x 3 normal equations (the tests check each against scipy's
    least_squares). Returns the thetas (subjects x 3) and each one's approximate posterior
    covariance (J'J + Omega^-1)^-1."""
    n = len(dose_mg)
    rows, t, d = samples.subject, samples.time_h, dose_mg[samples.subject]
    log_c = np.log(samples.concentration_mg_l)
    w = residual_sd(samples.concentration_mg_l)
    precision = np.linalg.inv(omega)

    def objective(theta: np.ndarray) -> np.ndarray:
        misfit = ((log_c - _log_prediction(theta[rows], t, d)) / w) ** 2
        prior = np.einsum("ij,jk,ik->i", theta - mean, precision, theta - mean)
        return np.bincount(rows, misfit, minlength=n) + prior

    def normal_equations(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        residual = (log_c - _log_prediction(theta[rows], t, d)) / w
        jac = np.empty((len(rows), 3))  # d residual / d theta, central differences
        for k in range(3):
            step = np.zeros(3)
            step[k] = JACOBIAN_STEP
            jac[:, k] = -(_log_prediction(theta[rows] + step, t, d)
                          - _log_prediction(theta[rows] - step, t, d)) / (2 * JACOBIAN_STEP) / w
        hessian = np.zeros((n, 3, 3))
        np.add.at(hessian, rows, jac[:, :, None] * jac[:, None, :])
        gradient = np.zeros((n, 3))
        np.add.at(gradient, rows, jac * residual[:, None])
        return hessian + precision, gradient + (theta - mean) @ precision

    theta = np.array(start, float)
    damping = np.full(n, 1e-3)
    cost = objective(theta)
    for _ in range(MAP_STEPS):
        hessian, gradient = normal_equations(theta)
        scaled = hessian + damping[:, None, None] * np.eye(3) * np.diagonal(
            hessian, axis1=1, axis2=2)[:, :, None]
        trial = theta - np.linalg.solve(scaled, gradient[:, :, None])[:, :, 0]
        trial_cost = objective(trial)
        better = trial_cost < cost
        theta[better], cost[better] = trial[better], trial_cost[better]
        damping = np.where(better, damping / 10.0, damping * 10.0)
        if np.all(damping > 1e12) or np.all(np.abs(gradient) < 1e-8):
            break
    hessian, _ = normal_equations(theta)
    return theta, np.linalg.inv(hessian)


def iterative_two_stage(samples: Samples, dose_mg: np.ndarray,
                        iterations: int = ITS_ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """Population mean and covariance of (log ka, log CL, log V) by the iterative two-stage
    method (Steimer, Mallet, Golmard & Boisvieux 1984): alternately, each subject's MAP
    estimate under the current population prior, then the mean of the estimates and
    their covariance plus the mean posterior covariance. Started from the pooled fit with
    a wide prior (log sd 1)."""
    n = len(dose_mg)
    mean = pooled_fit(samples, dose_mg)
    omega = np.eye(3)
    thetas = np.tile(mean, (n, 1))
    for _ in range(iterations):
        thetas, covariances = map_estimates(samples, dose_mg, mean, omega, thetas)
        mean = thetas.mean(axis=0)
        spread = thetas - mean
        omega = spread.T @ spread / n + covariances.mean(axis=0) + 1e-6 * np.eye(3)
    return mean, omega


def map_forecast(train: Subjects, train_samples: Samples, new: Subjects,
                 new_samples: Samples, query_subject: np.ndarray, query_time_h: np.ndarray
                 ) -> np.ndarray:
    """The frozen SOTA: the population fit of the training cohort (no covariates), then
    each new subject's MAP parameters from their early samples, and their predicted log
    concentrations at the query times."""
    mean, omega = iterative_two_stage(train_samples, train.dose_mg)
    thetas = map_estimates(new_samples, new.dose_mg, mean, omega,
                           np.tile(mean, (len(new.ids), 1)))[0]
    return _log_prediction(thetas[query_subject], query_time_h, new.dose_mg[query_subject])


def pooled_forecast(train: Subjects, train_samples: Samples, new: Subjects,
                    query_subject: np.ndarray, query_time_h: np.ndarray) -> np.ndarray:
    """The baseline: the pooled parameters for every new subject, dose-scaled."""
    theta = pooled_fit(train_samples, train.dose_mg)
    return _log_prediction(theta, query_time_h, new.dose_mg[query_subject])


# -- the files ---------------------------------------------------------------------------


def _subjects_csv(subjects: Subjects) -> bytes:
    return ("subject,dose_mg,weight_kg,creatinine_clearance_ml_min\n" + "".join(
        f"{s},{int(d):03d},{w:05.1f},{c:05.1f}\n" for s, d, w, c in zip(
            subjects.ids, subjects.dose_mg, subjects.weight_kg, subjects.crcl_ml_min,
            strict=True))).encode()


def _samples_csv(subjects: Subjects, samples: Samples) -> bytes:
    return ("subject,time_h,concentration_mg_l\n" + "".join(
        f"{subjects.ids[i]},{t:05.2f},{c:.4e}\n" for i, t, c in zip(
            samples.subject, samples.time_h, samples.concentration_mg_l,
            strict=True))).encode()


def prediction_csv(ids: list[str], subject: np.ndarray, time_h: np.ndarray,
                   values: np.ndarray | None, fmt: str = FULL_PRECISION) -> bytes:
    """`subject,time_h,log_concentration` rows (values None: the query, no value)."""
    if values is None:
        return ("subject,time_h\n" + "".join(
            f"{ids[i]},{t:05.2f}\n" for i, t in zip(subject, time_h, strict=True))).encode()
    return (f"subject,time_h,{VALUE}\n" + "".join(
        f"{ids[i]},{t:05.2f},{fmt.format(float(v))}\n"
        for i, t, v in zip(subject, time_h, values, strict=True))).encode()


def _rows(content: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(content.decode())))


def read_subjects(content: bytes) -> Subjects:
    rows = _rows(content)
    return Subjects([r["subject"] for r in rows],
                    np.array([float(r["dose_mg"]) for r in rows]),
                    np.array([float(r["weight_kg"]) for r in rows]),
                    np.array([float(r["creatinine_clearance_ml_min"]) for r in rows]))


def read_samples(content: bytes, subjects: Subjects) -> Samples:
    index = {s: k for k, s in enumerate(subjects.ids)}
    rows = _rows(content)
    return Samples(np.array([index[r["subject"]] for r in rows], dtype=int),
                   np.array([float(r["time_h"]) for r in rows]),
                   np.array([float(r["concentration_mg_l"]) for r in rows]))


def read_query(content: bytes, subjects: Subjects) -> tuple[np.ndarray, np.ndarray]:
    index = {s: k for k, s in enumerate(subjects.ids)}
    rows = _rows(content)
    return (np.array([index[r["subject"]] for r in rows], dtype=int),
            np.array([float(r["time_h"]) for r in rows]))


@dataclass(frozen=True)
class Instance:
    """One instance's visible cohorts as the files write them."""

    train: Subjects
    train_samples: Samples
    new: Subjects
    new_samples: Samples
    query_subject: np.ndarray
    query_time_h: np.ndarray


FILES = ("training_subjects.csv", "training_samples.csv", "new_subjects.csv",
         "new_samples.csv", "query.csv")


def parse_instance(files: dict[str, bytes]) -> Instance:
    """An instance's cohorts from its data files (every method reads them so)."""
    train = read_subjects(files["training_subjects.csv"])
    new = read_subjects(files["new_subjects.csv"])
    query_subject, query_time = read_query(files["query.csv"], new)
    return Instance(train, read_samples(files["training_samples.csv"], train),
                    new, read_samples(files["new_samples.csv"], new),
                    query_subject, query_time)


def read_instance(data_dir: Path) -> Instance:
    return parse_instance({name: (data_dir / name).read_bytes() for name in FILES})


# -- the draw ----------------------------------------------------------------------------


def draw_cohort(rng: np.random.Generator, n: int, prefix: str) -> Subjects:
    """n subjects with doses and covariates from the family's population (the values as
    the files write them)."""
    weight = np.clip(WEIGHT_MEDIAN_KG * np.exp(rng.normal(0.0, WEIGHT_LOG_SD, n)),
                     *WEIGHT_RANGE_KG)
    crcl = np.clip(CRCL_MEDIAN_ML_MIN * np.exp(rng.normal(0.0, CRCL_LOG_SD, n)),
                   *CRCL_RANGE_ML_MIN)
    return Subjects([f"{prefix}{k + 1:03d}" for k in range(n)],
                    np.array(DOSES_MG, float)[rng.integers(0, len(DOSES_MG), n)],
                    np.round(weight, 1), np.round(crcl, 1))


def draw_times(rng: np.random.Generator, counts: np.ndarray, window_h: tuple[float, float]
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per subject, `counts[i]` distinct sorted times log-uniform in the window, rounded
    to 0.01 h. Returns (subject index per row, times)."""
    subject, times = [], []
    lo, hi = np.log(window_h[0]), np.log(window_h[1])
    for i, m in enumerate(counts):
        t = np.unique(np.round(np.exp(rng.uniform(lo, hi, int(m))), 2))
        while len(t) < m:  # two times rounded together: draw again
            t = np.unique(np.r_[t, np.round(np.exp(rng.uniform(lo, hi, 1)), 2)])
        subject += [i] * int(m)
        times += list(t)
    return np.array(subject, dtype=int), np.array(times)


def individual_parameters(hidden: dict[str, float], subjects: Subjects,
                          eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ka, apparent CL/F, apparent V/F) of each subject: the population values, the
    covariate model on CL (allometric weight exponent, renal fraction scaled by
    creatinine clearance) and V (proportional to weight), times exp(eta) (eta: subjects x
    4: ka, CL, V and the relative bioavailability F, which divides both CL and V)."""
    weight = subjects.weight_kg / REFERENCE_WEIGHT_KG
    renal = 1.0 - hidden["renal_fraction"] + hidden["renal_fraction"] * (
        subjects.crcl_ml_min / REFERENCE_CRCL_ML_MIN)
    bioavailability = np.exp(eta[:, 3])
    ka = hidden["ka_pop_per_h"] * np.exp(eta[:, 0])
    cl = hidden["cl_pop_l_per_h"] * weight ** hidden["weight_exponent_cl"] * renal \
        * np.exp(eta[:, 1]) / bioavailability
    v = hidden["v_pop_l"] * weight * np.exp(eta[:, 2]) / bioavailability
    return ka, cl, v


def measure(rng: np.random.Generator, clean_mg_l: np.ndarray) -> np.ndarray:
    """Measured concentrations: the residual error on the log scale, rounded as the files
    write them (5 significant digits)."""
    noisy = clean_mg_l * np.exp(residual_sd(clean_mg_l) * rng.standard_normal(len(clean_mg_l)))
    return np.array([float(f"{c:.4e}") for c in noisy])


_README = """# Forecast the drug concentrations of new patients

## Scientific problem

A drug is taken as a single oral dose. How its concentration in blood plasma rises and
falls differs from patient to patient: how fast it is absorbed, how much of the body it
spreads into and how fast it is eliminated all vary, partly with measurable patient
characteristics and partly without a known cause. A clinical study measured a few plasma
samples per patient.

## Task objective

For each data set, forecast the log concentrations of the new patients at the query
times, from the study's training patients and the new patients' own early samples.

## Dataset information

`data/<set>/training_subjects.csv` and `new_subjects.csv`: each patient's dose, body
weight and creatinine clearance; `training_samples.csv` and `new_samples.csv`: the
measured plasma concentrations; `query.csv`: the new patients' times to forecast. See
`data_description.md`.

## Evaluation metrics

Root-mean-square error of the forecast natural-log concentrations against the measured
log concentrations at the query times, which carry the same measurement error as the
data (lower is better), compared with a reference value per data set.

## Output format

For each data set write `<OUTPUT_DIR>/<set>/prediction.csv` with the header
`subject,time_h,log_concentration` and one row per query, in the order of `query.csv`
(subject and time_h as in the query; log_concentration the natural log of the
concentration in mg/L).

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a subject or time that is
not the query's or a non-finite value counts as a failure for that data set. You may ask
for an evaluation of your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one study (its own drug); `{{dev}}` is the development study
(`evaluate` scores only it; the result is computed on the others).

Every patient received one oral dose at time 0 and was sampled afterwards.

- `training_subjects.csv`, `new_subjects.csv`: columns
  `subject,dose_mg,weight_kg,creatinine_clearance_ml_min` (body weight in kg; creatinine
  clearance, the kidneys' filtration rate, in mL/min).
- `training_samples.csv`: columns `subject,time_h,concentration_mg_l`, {SAMPLES_PER_TRAINING[0]}
  to {SAMPLES_PER_TRAINING[1]} samples per training patient at times between
  {SAMPLE_WINDOW_H[0]:g} and {SAMPLE_WINDOW_H[1]:g} h after the dose.
- `new_samples.csv`: the same columns, two early samples per new patient (one between
  {EARLY_WINDOWS_H[0][0]:g} and {EARLY_WINDOWS_H[0][1]:g} h, one between {EARLY_WINDOWS_H[1][0]:g} and {EARLY_WINDOWS_H[1][1]:g} h).
- `query.csv`: columns `subject,time_h`, {QUERIES_PER_NEW} times per new patient between
  {QUERY_WINDOW_H[0]:g} and {QUERY_WINDOW_H[1]:g} h.

The assay's error: a measured concentration y relates to the true concentration C by
log y = log C + w e, e standard normal, with w = sqrt({PROP_SD:g}^2 + ({ADD_SD_MG_L:g} mg/L
/ C)^2) (a {PROP_SD:.0%} proportional error and an additive error of {ADD_SD_MG_L:g} mg/L,
on the log scale). Concentrations are written with 5 significant digits.
"""


class PopulationPharmacokinetics(Family):
    name = "pk-population"
    domain = "biomedical modeling"
    task_type = "forecasting"
    extra = None  # numpy and scipy (core dependencies)
    sota_citation = ("Steimer, Mallet, Golmard & Boisvieux 1984, Alternative approaches to "
                     "estimation of population pharmacokinetic parameters: comparison with "
                     "the nonlinear mixed-effect model, Drug Metab. Rev. 15:265 (iterative "
                     "two-stage); Sheiner, Beal, Rosenberg & Marathe 1979, Forecasting "
                     "individual pharmacokinetics, Clin. Pharmacol. Ther. 26:294 (MAP "
                     "Bayesian forecasting)")
    version = "1"
    task_name = "Forecast the drug concentrations of new patients"
    sub_domain = "pharmacokinetics"
    tags = ("pharmacokinetics", "mixed effects", "covariates", "forecasting", "naturegym")
    libraries = ("numpy", "scipy")
    metric = Metric("rms_error_log_concentration", "ln(mg/L)",
                    "RMS of the forecast minus the measured natural-log concentration over "
                    "the query samples")
    metric_function = "csv_rms_error"
    metric_output = {"file": OUTPUT, "key": VALUE, "keys": ["subject", "time_h"],
                     "numeric_keys": ["time_h"], "query": "query.csv"}
    sota_identifiers = ("iterative_two_stage", "map_forecast", "Steimer", "Sheiner")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("naive pooled fit",
                              "one (ka, CL, V) for every patient, weighted least squares of "
                              "all training log concentrations pooled; the new patients' "
                              "samples and every covariate ignored"),
        "sota": Reference("population fit and MAP Bayesian forecasting",
                          "one-compartment oral model, log-normal variability on ka, CL "
                          "and V, no covariate model; population mean and covariance by "
                          f"the iterative two-stage method ({ITS_ITERATIONS} iterations, "
                          "Steimer et al. 1984); each new patient's maximum a posteriori "
                          "parameters from their early samples (Sheiner et al. 1979)",
                          SOTA_VERSION),
        "bound": Reference("the true individual parameters",
                           "each new patient's true ka, CL and V (covariate model and "
                           "individual variability), without the assay error"),
    }

    def draw(self, rng: np.random.Generator) -> Draw:
        return self._draw(rng, references=True)

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The data and hidden values only (the leak gate's hundreds of draws)."""
        return self._draw(rng, references=False)

    def _draw(self, rng: np.random.Generator, *, references: bool) -> Draw:
        # the design (visible: cohort sizes, sample counts and times, doses, covariates),
        # drawn apart from the hidden drug
        n_train = int(rng.integers(N_TRAIN[0], N_TRAIN[1] + 1))
        n_new = int(rng.integers(N_NEW[0], N_NEW[1] + 1))
        train, new = draw_cohort(rng, n_train, "T"), draw_cohort(rng, n_new, "N")
        train_rows, train_t = draw_times(rng, rng.integers(SAMPLES_PER_TRAINING[0],
                                                           SAMPLES_PER_TRAINING[1] + 1,
                                                           n_train), SAMPLE_WINDOW_H)
        early = [draw_times(rng, np.ones(n_new, dtype=int), window)[1]
                 for window in EARLY_WINDOWS_H]
        early_rows = np.repeat(np.arange(n_new), len(EARLY_WINDOWS_H))
        early_t = np.column_stack(early).ravel()
        query_rows, query_t = draw_times(rng, np.full(n_new, QUERIES_PER_NEW),
                                         QUERY_WINDOW_H)
        v_pop = float(rng.uniform(20.0, 60.0))
        hidden = {
            "ka_pop_per_h": float(rng.uniform(0.5, 2.5)),
            "v_pop_l": v_pop,
            "cl_pop_l_per_h": v_pop * float(rng.uniform(0.05, 0.15)),
            "weight_exponent_cl": float(rng.uniform(0.5, 1.0)),
            "renal_fraction": float(rng.uniform(0.6, 0.95)),
            "omega_ka": float(rng.uniform(0.2, 0.35)),
            "omega_cl": float(rng.uniform(0.1, 0.2)),
            "omega_v": float(rng.uniform(0.2, 0.35)),
            "omega_f": float(rng.uniform(0.3, 0.5)),
        }
        omegas = np.array([hidden[k] for k in ("omega_ka", "omega_cl", "omega_v", "omega_f")])
        train_p = individual_parameters(hidden, train, rng.standard_normal((n_train, 4))
                                        * omegas)
        new_p = individual_parameters(hidden, new, rng.standard_normal((n_new, 4)) * omegas)

        def clean(params, dose, rows, t):
            return bateman(t, dose[rows], *(p[rows] for p in params))

        train_samples = Samples(train_rows, train_t,
                                measure(rng, clean(train_p, train.dose_mg, train_rows,
                                                   train_t)))
        new_samples = Samples(early_rows, early_t,
                              measure(rng, clean(new_p, new.dose_mg, early_rows, early_t)))
        query_clean = clean(new_p, new.dose_mg, query_rows, query_t)
        query_measured = measure(rng, query_clean)
        draw = Draw(
            data={"training_subjects.csv": _subjects_csv(train),
                  "training_samples.csv": _samples_csv(train, train_samples),
                  "new_subjects.csv": _subjects_csv(new),
                  "new_samples.csv": _samples_csv(new, new_samples),
                  "query.csv": prediction_csv(new.ids, query_rows, query_t, None)},
            truth={OUTPUT: prediction_csv(new.ids, query_rows, query_t,
                                          np.log(query_measured), "{:.6f}")},
            hidden=hidden, outputs={},
            # the assay error's RMS over the query samples: what the oracle scores on
            # average
            floor=float(np.sqrt(np.mean(residual_sd(query_clean) ** 2))))
        if references:
            instance = parse_instance(draw.data)
            draw.outputs = {
                "baseline": {OUTPUT: prediction_csv(
                    new.ids, query_rows, query_t, _baseline(instance))},
                "sota": {OUTPUT: prediction_csv(
                    new.ids, query_rows, query_t, _sota(instance))},
                "oracle": {OUTPUT: prediction_csv(new.ids, query_rows, query_t,
                                                  np.log(query_clean))}}
        return draw

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        instance = read_instance(data_dir)
        return {OUTPUT: prediction_csv(instance.new.ids, instance.query_subject,
                                       instance.query_time_h, _baseline(instance))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        instance = read_instance(data_dir)
        return {OUTPUT: prediction_csv(instance.new.ids, instance.query_subject,
                                       instance.query_time_h,
                                       np.zeros(len(instance.query_time_h)))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Zero, the mean training log concentration, the mean training log concentration
        of the nearest sampling times (a training mean by time), and each new patient's
        last early sample carried forward (persistence)."""
        x = read_instance(data_dir)
        ids, subject, time_h = x.new.ids, x.query_subject, x.query_time_h
        log_c = np.log(x.train_samples.concentration_mg_l)
        by_time = np.array([log_c[np.argsort(np.abs(np.log(x.train_samples.time_h)
                                                    - np.log(t)))[:10]].mean()
                            for t in time_h])
        last = {int(i): float(np.log(c)) for i, c in zip(
            x.new_samples.subject, x.new_samples.concentration_mg_l, strict=True)}
        return {"constant": self.constant_outputs(data_dir),
                "training-mean": {OUTPUT: prediction_csv(
                    ids, subject, time_h, np.full(len(time_h), log_c.mean()))},
                "training-mean-by-time": {OUTPUT: prediction_csv(ids, subject, time_h,
                                                                 by_time)},
                "persistence": {OUTPUT: prediction_csv(
                    ids, subject, time_h, np.array([last[int(i)] for i in subject]))}}


def _baseline(x: Instance) -> np.ndarray:
    return pooled_forecast(x.train, x.train_samples, x.new, x.query_subject, x.query_time_h)


def _sota(x: Instance) -> np.ndarray:
    return map_forecast(x.train, x.train_samples, x.new, x.new_samples, x.query_subject,
                        x.query_time_h)
