"""Protein fitness on a simulated Potts landscape (regression scored by rank).

A hidden Potts model over a short protein (24 sites, the 20 amino acids): random fields
h_i(a) and sparse pairwise couplings J_ij(a, b) on a random contact graph. The family
alignment is a sample of the model (Gibbs sampling, p(s) ~ exp E(s)); the wild type is
the alignment's fittest member. A deep-mutational-scanning experiment measured the
fitness E(variant) - E(wild type) of 1000 double mutants with noise; the agent predicts
those fitnesses from the alignment alone. Metric: Spearman's rank correlation.

- baseline: site-agnostic amino-acid preference (the mutant residue's frequency over
  the whole alignment against the wild type's), which ignores where a mutation falls;
- state of the art: EVmutation's epistatic model (Hopf et al. 2017): a pairwise Potts
  model fitted to the reweighted alignment by L2-regularised pseudo-likelihood (as
  plmc does), a variant scored by its energy difference to the wild type. Version 1
  pinned the zero to the independent-site model of the same paper, which alignment
  neighbours beat (the closest member other than the wild type ranked the variants
  better on 22 % of instances, the 20 closest on 70 %): a no-science predictor must not
  beat the state of the art;
- oracle: the true Potts energy difference (its Spearman is below 1 only through the
  measurement noise).

What the state of the art leaves is the finite alignment: 1000 sequences estimate
some 110 000 coupling parameters of a rugged landscape (50-70 coupled pairs, couplings
stronger than the fields), which the regularisation shrinks; the noise-free energy stays
well above it (the bound gate). Version 3 made the alignment deeper and the landscape
more epistatic: in version 2 (500 sequences, 30-42 weaker couplings) the mean distance
to the 20 closest members, a local profile around the wild type, ranked the variants
better than the fitted model on 4 of 40 evaluation instances. Every
size the agent sees (sites, alignment depth, variant count) is a constant of the family;
the couplings, fields and the noise are hidden and only the alignment reveals them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..base import FULL_PRECISION, Draw, Family, Metric, Reference

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
N_SITES = 24
N_STATES = len(AMINO_ACIDS)
ALIGNMENT_DEPTH = 1000
GIBBS_SWEEPS = 60
N_VARIANTS = 1000
# Sequence reweighting of the state of the art (sequences within 80 % identity share
# one unit of weight) and its pseudocount (a fraction of the effective depth).
REWEIGHT_THETA = 0.2
PSEUDOCOUNT = 0.5
INDEPENDENT_VERSION = "independent-site-reweighted/1"
# Pseudo-likelihood regularisation of EVmutation's plmc runs (Hopf et al. 2017; the
# EVcouplings defaults): lambda_h on the fields, lambda_J times (q - 1)(L - 1) on the
# couplings.
PL_LAMBDA_H = 0.01
PL_LAMBDA_J = 0.01
PL_MAX_ITERATIONS = 500
PSEUDO_LIKELIHOOD_VERSION = "plm-potts-evmutation/1"


@dataclass(frozen=True)
class Potts:
    fields: np.ndarray  # (sites, states)
    couplings: dict[tuple[int, int], np.ndarray]  # (i, j) with i < j -> (states, states)

    def energy(self, sequences: np.ndarray) -> np.ndarray:
        """E(s) = sum_i h_i(s_i) + sum_{i<j} J_ij(s_i, s_j) of each row."""
        s = np.asarray(sequences)
        energy = self.fields[np.arange(self.fields.shape[0]), s].sum(axis=-1)
        for (i, j), coupling in self.couplings.items():
            energy = energy + coupling[s[..., i], s[..., j]]
        return energy


def draw_potts(rng: np.random.Generator, field_sd: float, coupling_sd: float,
               n_pairs: int, n_sites: int = N_SITES, n_states: int = N_STATES) -> Potts:
    """Gaussian fields and `n_pairs` distinct coupled site pairs with Gaussian J."""
    fields = rng.normal(0.0, field_sd, (n_sites, n_states))
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < n_pairs:
        i, j = sorted(int(v) for v in rng.choice(n_sites, 2, replace=False))
        pairs.add((i, j))
    couplings = {pair: rng.normal(0.0, coupling_sd, (n_states, n_states))
                 for pair in sorted(pairs)}
    return Potts(fields, couplings)


def gibbs_sample(rng: np.random.Generator, model: Potts, n_sequences: int,
                 sweeps: int = GIBBS_SWEEPS) -> np.ndarray:
    """Independent Gibbs chains from uniform random starts, one sequence per chain:
    each sweep redraws every site from its conditional p(a | rest) ~ exp(h_i(a) +
    sum_j J_ij(a, s_j)) (by the Gumbel-max trick)."""
    n_sites, n_states = model.fields.shape
    neighbours: dict[int, list[tuple[int, np.ndarray]]] = {i: [] for i in range(n_sites)}
    for (i, j), coupling in model.couplings.items():
        neighbours[i].append((j, coupling))
        neighbours[j].append((i, coupling.T))
    s = rng.integers(0, n_states, (n_sequences, n_sites))
    for _ in range(sweeps):
        for i in range(n_sites):
            logits = np.broadcast_to(model.fields[i], (n_sequences, n_states)).copy()
            for j, coupling in neighbours[i]:
                logits += coupling[:, s[:, j]].T
            gumbel = -np.log(-np.log(rng.random((n_sequences, n_states))))
            s[:, i] = np.argmax(logits + gumbel, axis=1)
    return s


def sequence_weights(alignment: np.ndarray, theta: float = REWEIGHT_THETA) -> np.ndarray:
    """1 / the number of sequences within (1 - theta) identity of each (itself
    included), the reweighting of Morcos et al. 2011 and Hopf et al. 2017."""
    a = np.asarray(alignment)
    weights = np.empty(len(a))
    for start in range(0, len(a), 200):
        identity = (a[start:start + 200, None, :] == a[None, :, :]).mean(axis=-1)
        weights[start:start + 200] = 1.0 / (identity >= 1.0 - theta).sum(axis=1)
    return weights


def independent_site_model(alignment: np.ndarray, n_states: int = N_STATES) -> np.ndarray:
    """log f_i(a): the reweighted site frequencies with a pseudocount of PSEUDOCOUNT
    times the effective depth spread uniformly (sites x states)."""
    weights = sequence_weights(alignment)
    depth = weights.sum()
    counts = np.stack([np.bincount(alignment[:, i], weights=weights, minlength=n_states)
                       for i in range(alignment.shape[1])])
    return np.log((counts + PSEUDOCOUNT * depth / n_states) / (depth * (1.0 + PSEUDOCOUNT)))


def independent_site_scores(alignment: np.ndarray, wildtype: np.ndarray,
                            variants: np.ndarray) -> np.ndarray:
    """Each variant's log-probability ratio to the wild type under the independent-site
    model (Hopf et al. 2017's independent model)."""
    log_f = independent_site_model(alignment)
    sites = np.arange(len(wildtype))
    return log_f[sites, variants].sum(axis=1) - log_f[sites, wildtype].sum()


@dataclass(frozen=True)
class PseudoLikelihood:
    """The regularised negative log pseudo-likelihood of a pairwise Potts model on a
    weighted alignment and its gradient. Parameters: the fields h (sites x states)
    then a full (sites*states)^2 matrix W whose symmetrised, diagonal-block-free part
    is the coupling matrix J (J[i*q + a, j*q + b] = J_ij(a, b)):

        -sum_n w_n sum_i log p(s_ni | s_n,-i) + lambda_h |h|^2 + lambda_J sum_{i<j} |J_ij|^2,
        p(a | rest) ~ exp(h_i(a) + sum_{j != i} J_ij(a, s_j))."""

    alignment: np.ndarray
    weights: np.ndarray
    n_states: int
    lambda_h: float
    lambda_j: float

    @property
    def shape(self) -> tuple[int, int]:
        return self.alignment.shape[1], self.n_states

    def one_hot(self) -> Any:
        from scipy import sparse

        n, sites = self.alignment.shape
        columns = (np.arange(sites) * self.n_states + self.alignment).ravel()
        return sparse.csr_matrix((np.ones(n * sites), (np.repeat(np.arange(n), sites),
                                                       columns)),
                                 shape=(n, sites * self.n_states))

    def mask(self) -> np.ndarray:
        sites, q = self.shape
        return 1.0 - np.kron(np.eye(sites), np.ones((q, q)))

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sites, q = self.shape
        size = sites * q
        w = theta[size:].reshape(size, size)
        return theta[:size], self.mask() * (w + w.T) / 2.0

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        sites, q = self.shape
        n = len(self.alignment)
        x = self.one_hot()
        dense = x.toarray().reshape(n, sites, q)
        h, coupling = self.unpack(theta)
        logits = (h + np.asarray(x @ coupling)).reshape(n, sites, q)
        top = logits.max(axis=2, keepdims=True)
        log_z = top[..., 0] + np.log(np.exp(logits - top).sum(axis=2))
        observed = (logits * dense).sum(axis=2)
        w = self.weights
        value = (-(w[:, None] * (observed - log_z)).sum() + self.lambda_h * h @ h
                 + self.lambda_j / 2.0 * (coupling * coupling).sum())
        residual = (w[:, None, None] * (np.exp(logits - log_z[..., None]) - dense)
                    ).reshape(n, sites * q)
        grad_h = residual.sum(axis=0) + 2.0 * self.lambda_h * h
        m = np.asarray(x.T @ residual)
        grad_w = self.mask() * (m + m.T) / 2.0 + self.lambda_j * coupling
        return float(value), np.concatenate([grad_h, grad_w.ravel()])


def pseudo_likelihood_objective(alignment: np.ndarray, n_states: int = N_STATES,
                                weights: np.ndarray | None = None) -> PseudoLikelihood:
    """The objective EVmutation minimises on `alignment` (weights: the 80 % identity
    reweighting unless given)."""
    alignment = np.asarray(alignment)
    sites = alignment.shape[1]
    return PseudoLikelihood(alignment,
                            sequence_weights(alignment) if weights is None else weights,
                            n_states, PL_LAMBDA_H,
                            PL_LAMBDA_J * (n_states - 1) * (sites - 1))


def fit_pseudo_likelihood(alignment: np.ndarray, n_states: int = N_STATES,
                          weights: np.ndarray | None = None,
                          max_iterations: int = PL_MAX_ITERATIONS) -> Potts:
    """EVmutation's epistatic model: the pairwise Potts model that minimises the
    reweighted, L2-regularised negative log pseudo-likelihood (L-BFGS from zero, as
    plmc), returned as a Potts model (fields, and couplings on every site pair)."""
    from scipy.optimize import minimize

    objective = pseudo_likelihood_objective(alignment, n_states, weights)
    sites = objective.shape[0]
    size = sites * n_states
    result = minimize(objective.value_and_gradient, np.zeros(size + size * size),
                      jac=True, method="L-BFGS-B", options={"maxiter": max_iterations})
    h, coupling = objective.unpack(result.x)
    q = n_states
    couplings = {(i, j): coupling[i * q:(i + 1) * q, j * q:(j + 1) * q].copy()
                 for i in range(sites) for j in range(i + 1, sites)}
    return Potts(h.reshape(sites, q), couplings)


def pseudo_likelihood_scores(alignment: np.ndarray, wildtype: np.ndarray,
                             variants: np.ndarray) -> np.ndarray:
    """Each variant's energy difference to the wild type under the fitted Potts model
    (Hopf et al. 2017's epistatic model, EVmutation's ΔE)."""
    model = fit_pseudo_likelihood(alignment)
    return model.energy(variants) - model.energy(np.asarray(wildtype)[None])[0]


def composition_scores(alignment: np.ndarray, wildtype: np.ndarray,
                       variants: np.ndarray) -> np.ndarray:
    """Site-agnostic preference: log of each residue's frequency over the whole
    alignment, summed over the variant against the wild type."""
    log_f = np.log(np.bincount(alignment.ravel(), minlength=N_STATES) + 1.0)
    return log_f[variants].sum(axis=1) - log_f[wildtype].sum()


def nearest_neighbour_scores(alignment: np.ndarray, variants: np.ndarray,
                             wildtype: np.ndarray) -> np.ndarray:
    """Minus the Hamming distance from each variant to its closest alignment member
    other than the wild type, ties broken by how many members are that close. The wild
    type is left out because every double mutant lies at distance 2 from it: with it,
    the distance is the same for every variant and ranks nothing (a constant answer in
    disguise, which would prove nothing in the no-science gate)."""
    others = alignment[(alignment != wildtype).any(axis=1)]
    distances = (variants[:, None, :] != others[None, :, :]).sum(axis=2)
    closest = distances.min(axis=1)
    ties = (distances == closest[:, None]).sum(axis=1)
    return -closest + ties / (len(others) + 1.0)


def nearest_members_scores(alignment: np.ndarray, variants: np.ndarray,
                           wildtype: np.ndarray, k: int = 20) -> np.ndarray:
    """Minus the mean Hamming distance from each variant to its `k` closest alignment
    members other than the wild type: a smoother nearest-neighbour (a density of the
    family around the variant), which beat version 1's independent-site model on 70 %
    of instances."""
    others = alignment[(alignment != wildtype).any(axis=1)]
    distances = (variants[:, None, :] != others[None, :, :]).sum(axis=2)
    return -np.sort(distances, axis=1)[:, :k].mean(axis=1)


def double_mutants(rng: np.random.Generator, wildtype: np.ndarray,
                   count: int = N_VARIANTS) -> np.ndarray:
    """`count` distinct double mutants of the wild type (two sites, new residues)."""
    seen: set[bytes] = set()
    variants = []
    while len(variants) < count:
        v = wildtype.copy()
        for site in rng.choice(len(wildtype), 2, replace=False):
            v[site] = (wildtype[site] + rng.integers(1, N_STATES)) % N_STATES
        if v.tobytes() not in seen:
            seen.add(v.tobytes())
            variants.append(v)
    return np.array(variants)


def sequence_text(sequence: np.ndarray) -> str:
    return "".join(AMINO_ACIDS[a] for a in sequence)


def parse_sequence(text: str) -> np.ndarray:
    text = text.strip()
    if len(text) != N_SITES or any(c not in AMINO_ACIDS for c in text):
        raise ValueError(f"a sequence of {N_SITES} amino-acid letters expected")
    return np.array([AMINO_ACIDS.index(c) for c in text])


def variant_name(wildtype: np.ndarray, variant: np.ndarray) -> str:
    """Mutations as <wild-type residue><1-based site><new residue>, joined by ':'."""
    sites = np.flatnonzero(variant != wildtype)
    return ":".join(f"{AMINO_ACIDS[wildtype[i]]}{i + 1}{AMINO_ACIDS[variant[i]]}"
                    for i in sites)


def fasta(names: list[str], sequences: np.ndarray) -> bytes:
    return "".join(f">{n}\n{sequence_text(s)}\n" for n, s in zip(names, sequences,
                                                                  strict=True)).encode()


def read_fasta(path: Path) -> np.ndarray:
    lines = [line for line in path.read_text().splitlines() if line and line[0] != ">"]
    return np.array([parse_sequence(line) for line in lines])


def fitness_csv(names: list[str], values: np.ndarray, fmt: str = "{:.6g}") -> bytes:
    lines = ["variant,fitness"] + [f"{n},{fmt.format(float(v))}"
                                   for n, v in zip(names, values, strict=True)]
    return ("\n".join(lines) + "\n").encode()


def read_instance(data_dir: Path) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """The alignment, the wild type, the variant names and the variant sequences."""
    alignment = read_fasta(data_dir / "alignment.fasta")
    wildtype = read_fasta(data_dir / "wildtype.fasta")[0]
    names = (data_dir / "variants.txt").read_text().split()
    variants = []
    for name in names:
        v = wildtype.copy()
        for mutation in name.split(":"):
            site = int(mutation[1:-1]) - 1
            v[site] = AMINO_ACIDS.index(mutation[-1])
        variants.append(v)
    return alignment, wildtype, names, np.array(variants)


_README = f"""# Predict the fitness of protein variants from their family's sequences

## Scientific problem

A small protein domain of {N_SITES} residues belongs to a family whose members, shaped
by selection for function, are collected in a multiple sequence alignment. A
deep-mutational-scanning experiment made {N_VARIANTS} double mutants of one member, the
wild type, and measured each one's fitness relative to the wild type, with experimental
noise. Residues act on fitness alone and in pairs.

## Task objective

For each protein, predict the measured fitness of every double mutant. Only the order
matters: the score compares the ranks of your predictions with the ranks of the
measurements.

## Dataset information

`data/<protein>/alignment.fasta`: the family's aligned sequences;
`data/<protein>/wildtype.fasta`: the wild type; `data/<protein>/variants.txt`: the
variants to predict. See `data_description.md`.

## Evaluation metrics

Spearman's rank correlation between your predictions and the measured fitnesses (higher
is better), compared with a reference value per protein.

## Output format

For each protein write `<OUTPUT_DIR>/<protein>/fitness.csv` with the header
`variant,fitness` and one row per variant of `variants.txt` (any order); higher means
fitter.

## Submission guidelines

A missing or unreadable file, a wrong header, a missing, repeated or unknown variant or
a non-finite value counts as a failure for that protein. You may ask for an evaluation
of your current outputs.
"""

_DATA = f"""# Data

Each folder under `data/` is one protein (its own family); `{{dev}}` is the development
protein (`evaluate` scores only it; the result is computed on the others).

- `alignment.fasta`: {ALIGNMENT_DEPTH} aligned family members, {N_SITES} residues each
  (one-letter amino-acid codes, no gaps).
- `wildtype.fasta`: the wild type (a member of the family).
- `variants.txt`: one variant per line, its two mutations as `<wild-type residue><site
  (1-based)><new residue>` joined by `:`, e.g. `K3L:A12G`.
"""


class PottsFitness(Family):
    name = "potts-fitness"
    domain = "protein biology"
    task_type = "regression"
    extra = None  # numpy and scipy (core dependencies)
    sota_citation = ("Epistatic (pairwise pseudo-likelihood Potts) model of Hopf, Ingraham, Poelwijk, Schärfe, "
                     "Springer, Sander and Marks (2017), Mutation effects predicted from "
                     "sequence co-variation, Nature Biotechnology 35: 128-135")
    version = "3"
    task_name = "Predict protein variant fitness from a family alignment"
    sub_domain = "protein fitness"
    tags = ("protein fitness", "deep mutational scanning", "epistasis", "naturegym")
    libraries = ("numpy", "scipy")
    metric = Metric("spearman_rho", "",
                    "Spearman rank correlation of predicted with measured variant fitness",
                    "higher_is_better")
    metric_function = "csv_spearman"
    metric_output = {"file": "fitness.csv", "keys": ["variant"], "key": "fitness"}
    sota_identifiers = ("pseudo_likelihood_scores", "fit_pseudo_likelihood",
                        "PseudoLikelihood")
    readme = _README
    data_description = _DATA
    references = {
        "baseline": Reference("site-agnostic residue preference",
                              "the mutant residues' frequency over the whole alignment "
                              "against the wild type's, wherever they fall"),
        "sota": Reference("pseudo-likelihood Potts model (EVmutation)",
                          "a pairwise Potts model fitted to the alignment by L2-"
                          "regularised pseudo-likelihood with sequence reweighting (80 % "
                          "identity; lambda_h 0.01, lambda_J 0.01 (q-1)(L-1), L-BFGS); a "
                          "variant's score is its energy difference to the wild type "
                          "(Hopf et al. 2017's epistatic model)", PSEUDO_LIKELIHOOD_VERSION),
        "bound": Reference("the true Potts energy",
                           "the true fields and couplings' energy difference to the wild "
                           "type, without the measurement noise"),
    }

    def draw_data(self, rng: np.random.Generator) -> Draw:
        """The data and hidden values without the references (the state of the art's
        fit costs seconds; the leak gate draws hundreds)."""
        return self._draw(rng, references=False)

    def draw(self, rng: np.random.Generator) -> Draw:
        return self._draw(rng, references=True)

    def _draw(self, rng: np.random.Generator, references: bool) -> Draw:
        hidden = {"field_sd": float(rng.uniform(0.8, 1.2)),
                  "coupling_sd": float(rng.uniform(1.2, 1.6)),
                  "coupled_pairs": float(rng.integers(50, 71)),
                  "noise_fraction": float(rng.uniform(0.2, 0.4))}
        model = draw_potts(rng, hidden["field_sd"], hidden["coupling_sd"],
                           int(hidden["coupled_pairs"]))
        alignment = gibbs_sample(rng, model, ALIGNMENT_DEPTH)
        energies = model.energy(alignment)
        wildtype = alignment[int(np.argmax(energies))].copy()
        variants = double_mutants(rng, wildtype)
        effect = model.energy(variants) - model.energy(wildtype)
        noise_sd = hidden["noise_fraction"] * float(effect.std())
        measured = effect + rng.normal(0.0, noise_sd, len(effect))
        hidden.update({"wildtype_energy": float(energies.max()),
                       "mean_alignment_energy": float(energies.mean()),
                       "mean_effect": float(effect.mean()), "effect_sd": float(effect.std()),
                       "noise_sd": noise_sd})
        names = [variant_name(wildtype, v) for v in variants]
        members = [f"seq{k + 1:04d}" for k in range(ALIGNMENT_DEPTH)]
        outputs = {}
        if references:
            sota = pseudo_likelihood_scores(alignment, wildtype, variants)
            baseline = composition_scores(alignment, wildtype, variants)
            outputs = {"baseline": {"fitness.csv": fitness_csv(names, baseline)},
                       "sota": {"fitness.csv": fitness_csv(names, sota, FULL_PRECISION)},
                       "oracle": {"fitness.csv": fitness_csv(names, effect,
                                                             FULL_PRECISION)}}
        return Draw(
            data={"alignment.fasta": fasta(members, alignment),
                  "wildtype.fasta": fasta(["wildtype"], wildtype[None]),
                  "variants.txt": ("\n".join(names) + "\n").encode()},
            truth={"fitness.csv": fitness_csv(names, measured, "{:.6f}")},
            hidden=hidden, outputs=outputs, floor=1.0)

    def baseline_outputs(self, data_dir: Path) -> dict[str, bytes]:
        alignment, wildtype, names, variants = read_instance(data_dir)
        return {"fitness.csv": fitness_csv(names, composition_scores(alignment, wildtype,
                                                                     variants))}

    def constant_outputs(self, data_dir: Path) -> dict[str, bytes]:
        names = (data_dir / "variants.txt").read_text().split()
        return {"fitness.csv": fitness_csv(names, np.zeros(len(names)))}

    def no_science_outputs(self, data_dir: Path) -> dict[str, dict[str, bytes]]:
        """Constant; nearest-neighbour (closeness to the nearest family member other
        than the wild type) and its smoother form over the 20 nearest members; the
        mutation count (the same for every double mutant, so it ranks nothing)."""
        alignment, wildtype, names, variants = read_instance(data_dir)
        nearest = nearest_neighbour_scores(alignment, variants, wildtype)
        nearest_20 = nearest_members_scores(alignment, variants, wildtype, 20)
        count = -np.array([name.count(":") + 1 for name in names], float)
        return {"constant": self.constant_outputs(data_dir),
                "nearest-neighbour": {"fitness.csv": fitness_csv(names, nearest)},
                "nearest-20-members": {"fitness.csv": fitness_csv(names, nearest_20)},
                "mutation-count": {"fitness.csv": fitness_csv(names, count)}}
