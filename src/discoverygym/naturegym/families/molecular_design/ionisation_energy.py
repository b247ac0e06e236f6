"""Ionisation energies of held-out molecules (RDKit geometries, PySCF Hartree-Fock).

Each instance draws training and held-out molecules from the fixed R-X pool
(`molecule_pool`: a hydrocarbon residue with one functional group, at most 8 heavy
atoms). The "measured" vertical ionisation energy of a molecule is its Koopmans'
estimate (minus the RHF/STO-3G HOMO energy at the RDKit ETKDG + MMFF geometry) through
a hidden calibration: IE = slope * IE_Koopmans + offset + shift[functional group] +
noise, the slope, offset and ten group shifts drawn per instance (the systematic errors
of a minimal-basis, frozen-orbital estimate differ by functional group), the noise
Gaussian with a stated standard deviation. The agent sees the measured energies of the
training molecules and predicts the held-out ones.

- metric: RMS of predicted minus measured ionisation energy (eV) over the held-out
  molecules (the truth carries the noise: the metric has a floor);
- baseline: a least-squares line in the heavy-atom count;
- state of the art: kernel ridge regression with the Tanimoto kernel on Morgan count
  fingerprints (Rupp et al. 2012; Ralaivola et al. 2005; Rogers and Hahn 2010),
  `tanimoto_krr`;
- oracle: the calibration with its true parameters on the Hartree-Fock values, without
  the noise.

Why valid: the calibration is drawn per instance, so no public code computes the
truth; the molecules, their number and the noise level are drawn independently of it;
a fingerprint model of about fifty molecules cannot learn how orbital energies move
with the residue and group, while a model that computes the electronic structure and
fits the calibration (the discovery the task asks for) reaches the oracle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..base import FULL_PRECISION, Draw, Family, Metric, Reference
from .molecule_pool import GROUPS, METHOD, Molecule, load_pool
from .tanimoto_krr import KRR_VERSION, krr_predict, nearest_neighbour

N_TRAIN = (40, 55)  # inclusive
N_QUERY = 25  # enough held-out molecules that copying a neighbour rarely wins by luck
SLOPE = (0.8, 1.2)
OFFSET_EV = (0.5, 2.0)
GROUP_SHIFT_SD_EV = 0.5
NOISE_EV = (0.05, 0.12)
VALUE = "ionisation_energy_ev"
KEYS = ["smiles"]

_README = """# Predict the ionisation energies of small organic molecules

## Scientific problem

Each molecule is a small hydrocarbon residue (methyl to phenyl) carrying one functional
group, at most eight heavy atoms. Its vertical first ionisation energy was measured by
one laboratory whose measurements scatter with a stated standard deviation. How the
ionisation energy depends on the structure, and how it relates to what can be computed
for each molecule, is for you to find out.

## Task objective

For each set, predict the ionisation energy (eV) of the query molecules.

## Dataset information

`data/<set>/measured.csv`: SMILES and the measured ionisation energy (eV) of the
training molecules; `data/<set>/query.csv`: the SMILES to predict;
`data/<set>/info.json`: the measurement scatter. See `data_description.md`.

## Evaluation metrics

Root-mean-square error of the predicted ionisation energies against held-out
measurements of the query molecules, which carry the same scatter as the data (lower
is better), compared with a reference value per set.

## Output format

For each set write `<OUTPUT_DIR>/<set>/prediction.csv` with the header
`smiles,ionisation_energy_ev` and one row per query molecule, in the order of
`query.csv`, the SMILES copied from it.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing row, a SMILES that is not the
query's or a non-finite value counts as a failure for that set. You may ask for an
evaluation of your current outputs.
"""

_DATA = """# Data

Each folder under `data/` is one set of molecules measured together; `{dev}` is the
development set (`evaluate` scores only it; the result is computed on the others).

- `measured.csv`: columns `smiles,ionisation_energy_ev` (canonical RDKit SMILES; the
  energy in eV, written with a fixed width of six characters), one row per training
  molecule.
- `query.csv`: column `smiles`, the molecules whose energies are held out.
- `info.json`: `scatter_ev` (the standard deviation of the measurement scatter; the
  held-out measurements carry the same) and `unit`.
"""


def calibrated(molecules: list[Molecule], hidden: dict[str, float]) -> np.ndarray:
    """The noise-free measured ionisation energy of each molecule under `hidden`."""
    return np.array([hidden["slope"] * -m.homo_ev + hidden["offset_ev"]
                     + hidden[group_key(m.group)] for m in molecules])


def group_key(group: str) -> str:
    return "shift_ev_" + group.replace(" ", "_")


def _table(smiles: list[str], values: np.ndarray | None, fmt: str) -> bytes:
    lines = [",".join(KEYS + ([VALUE] if values is not None else []))]
    for k, text in enumerate(smiles):
        lines.append(text if values is None else f"{text},{fmt.format(float(values[k]))}")
    return ("\n".join(lines) + "\n").encode()


def _read(data_dir: Path) -> tuple[list[str], np.ndarray, list[str]]:
    measured = (data_dir / "measured.csv").read_text().splitlines()[1:]
    query = (data_dir / "query.csv").read_text().splitlines()[1:]
    train = [line.split(",") for line in measured if line]
    return ([t[0] for t in train], np.array([float(t[1]) for t in train]),
            [q for q in query if q])


def heavy_atom_line(train: list[str], values: np.ndarray, query: list[str]) -> np.ndarray:
    """The baseline: least squares of the value on the heavy-atom count."""
    from rdkit import Chem

    def counts(smiles):
        return np.array([Chem.MolFromSmiles(s).GetNumHeavyAtoms() for s in smiles], float)

    design = np.column_stack([np.ones(len(train)), counts(train)])
    coef, *_ = np.linalg.lstsq(design, values, rcond=None)
    return coef[0] + coef[1] * counts(query)


class IonisationEnergy(Family):
    name = "ionisation-energy"
    version = "1"
    task_name = "Predict the ionisation energies of held-out molecules"
    sub_domain = "quantum chemistry"
    tags = ("molecular properties", "quantum chemistry", "regression", "naturegym")
    libraries = ("numpy", "rdkit", "pyscf")
    domain = "molecular design"
    task_type = "regression"
    extra = "chem"
    sota_citation = ("kernel ridge regression (Rupp, Tkatchenko, Mueller, von Lilienfeld, "
                     "PRL 108, 058301, 2012) with the Tanimoto kernel (Ralaivola, "
                     "Swamidass, Saigo, Baldi, Neural Networks 18, 1093, 2005) on Morgan "
                     "fingerprints (Rogers, Hahn, J. Chem. Inf. Model. 50, 742, 2010)")
    metric = Metric("rms_error_ev", "eV",
                    "RMS of predicted minus held-out measured ionisation energy over the "
                    "query molecules")
    metric_function = "csv_rms_error"
    metric_output = {"file": "prediction.csv", "key": VALUE, "keys": KEYS,
                     "numeric_keys": [], "query": "query.csv"}
    sota_identifiers = ("krr_predict", "tanimoto_krr", "Tanimoto", "Morgan")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("heavy-atom line",
                              "least squares of the energy on the heavy-atom count"),
        "sota": Reference("Tanimoto kernel ridge regression",
                          "kernel ridge regression (Rupp et al. 2012) with the Tanimoto "
                          "kernel on Morgan count fingerprints of radius 1 (Ralaivola et "
                          "al. 2005; Rogers and Hahn 2010), regulariser by leave-one-out",
                          KRR_VERSION),
        "bound": Reference("the hidden calibration",
                           f"the true calibration applied to {METHOD} Koopmans' "
                           "ionisation energies, without the measurement scatter"),
    }

    def draw(self, rng: np.random.Generator) -> Draw:
        return self._draw(rng, references=True)

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The data and hidden values only (the leak gate's hundreds of draws)."""
        return self._draw(rng, references=False)

    def _draw(self, rng: np.random.Generator, *, references: bool) -> Draw:
        pool = load_pool()
        hidden = {"slope": float(rng.uniform(*SLOPE)),
                  "offset_ev": float(rng.uniform(*OFFSET_EV)),
                  **{group_key(g): float(rng.normal(0.0, GROUP_SHIFT_SD_EV))
                     for g in GROUPS}}
        n_train = int(rng.integers(N_TRAIN[0], N_TRAIN[1] + 1))
        scatter = round(float(rng.uniform(*NOISE_EV)), 3)
        order = rng.permutation(len(pool))
        train = [pool[k] for k in order[:n_train]]
        query = [pool[k] for k in order[n_train:n_train + N_QUERY]]
        clean = calibrated(train + query, hidden)
        # the values as the files write them (so the data and the draw agree to the bit)
        noisy = np.array([float(f"{v:.3f}") for v in clean + rng.normal(0.0, scatter,
                                                                           len(clean))])
        train_smiles = [m.smiles for m in train]
        query_smiles = [m.smiles for m in query]
        info = {"scatter_ev": scatter, "unit": "eV"}
        draw = Draw(
            data={"measured.csv": _table(train_smiles, noisy[:n_train], "{:06.3f}"),
                  "query.csv": _table(query_smiles, None, ""),
                  "info.json": (json.dumps(info, sort_keys=True, indent=1) + "\n").encode()},
            truth={"prediction.csv": _table(query_smiles, noisy[n_train:], "{:06.3f}")},
            hidden=hidden, outputs={}, floor=scatter)
        if references:
            sota = krr_predict(train_smiles, noisy[:n_train], query_smiles)
            baseline = heavy_atom_line(train_smiles, noisy[:n_train], query_smiles)
            draw.outputs = {
                "baseline": {"prediction.csv": _table(query_smiles, baseline,
                                                      FULL_PRECISION)},
                "sota": {"prediction.csv": _table(query_smiles, sota, FULL_PRECISION)},
                "oracle": {"prediction.csv": _table(query_smiles, clean[n_train:],
                                                    FULL_PRECISION)}}
        return draw

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        train, values, query = _read(data_dir)
        return {"prediction.csv": _table(query, heavy_atom_line(train, values, query),
                                         FULL_PRECISION)}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        _, _, query = _read(data_dir)
        return {"prediction.csv": _table(query, np.full(len(query), 10.0), FULL_PRECISION)}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        train, values, query = _read(data_dir)
        return {
            "constant": self.constant_outputs(data_dir),
            "training-mean": {"prediction.csv": _table(
                query, np.full(len(query), float(values.mean())), FULL_PRECISION)},
            "nearest-neighbour": {"prediction.csv": _table(
                query, nearest_neighbour(train, values, query), FULL_PRECISION)},
        }
