"""A fixed pool of small organic molecules and their Hartree-Fock properties.

Every molecule is R-X: a hydrocarbon residue R (methyl ... phenyl) carrying one
functional group X (hydroxyl, amine, nitrile, ...), at most 8 heavy atoms. Its geometry
comes from RDKit (ETKDG v3 embedding with a fixed seed, then the MMFF94 force field);
PySCF computes restricted Hartree-Fock in the STO-3G basis at that geometry. The
molecular-design families draw their training and held-out molecules from this pool.

Why a cache: one molecule costs about 0.5-2 s of CPU, the pool about one to two minutes
on one core the first time. Each molecule's result is cached in the user cache
directory (`core.paths.cache_dir`), keyed by the SMILES, the method and the RDKit and
PySCF versions, so every later package reads it back. Values are rounded (energies to
1e-5 hartree) so a rerun on another machine writes the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from ....core.paths import cache_dir

#: hydrocarbon residues: name -> SMILES fragment whose last written atom carries X
RESIDUES: dict[str, str] = {
    "methyl": "C", "ethyl": "CC", "propyl": "CCC", "isopropyl": "CC(C)",
    "tert-butyl": "CC(C)(C)", "vinyl": "C=C", "cyclopropyl": "C1CC1",
    "cyclopentyl": "C1CCCC1", "phenyl": "c1ccccc1",
}
#: functional groups: name -> SMILES of the group bonded to the residue
GROUPS: dict[str, str] = {
    "hydroxyl": "O", "amine": "N", "fluoride": "F", "chloride": "Cl", "nitrile": "C#N",
    "aldehyde": "C=O", "ketone": "C(C)=O", "carboxylic acid": "C(=O)O",
    "methyl ether": "OC", "amide": "C(N)=O",
}
MAX_HEAVY_ATOMS = 8
EMBED_SEED = 20240611
METHOD = "RHF/STO-3G at the RDKit ETKDGv3 + MMFF94 geometry"
HARTREE_EV = 27.211386245988  # CODATA 2018


@dataclass(frozen=True)
class Molecule:
    smiles: str  # canonical SMILES
    residue: str
    group: str
    heavy_atoms: int
    homo_ev: float  # highest occupied orbital energy
    lumo_ev: float  # lowest unoccupied orbital energy
    dipole_debye: float
    energy_hartree: float

    @property
    def gap_ev(self) -> float:
        return self.lumo_ev - self.homo_ev


def _chem():
    try:
        from rdkit import Chem
        from rdkit.Chem import AllChem
    except ImportError as exc:  # the family's refusal names the extra
        raise ImportError("the molecular-design families need the 'chem' extra "
                          "(pip install 'discoverygym[chem]')") from exc
    return Chem, AllChem


def pool_smiles() -> list[tuple[str, str, str]]:
    """(canonical SMILES, residue, group) of every R-X with at most MAX_HEAVY_ATOMS heavy
    atoms, in a fixed order."""
    chem, _ = _chem()
    pool, seen = [], set()
    for residue, r_smiles in RESIDUES.items():
        for group, x_smiles in GROUPS.items():
            mol = chem.MolFromSmiles(r_smiles + x_smiles)
            smiles = chem.MolToSmiles(mol)
            if mol.GetNumHeavyAtoms() <= MAX_HEAVY_ATOMS and smiles not in seen:
                seen.add(smiles)
                pool.append((smiles, residue, group))
    return pool


def geometry(smiles: str) -> list[tuple[str, tuple[float, float, float]]]:
    """Atoms and positions (angstrom): ETKDG v3 with a fixed seed, then MMFF94."""
    chem, all_chem = _chem()
    mol = chem.AddHs(chem.MolFromSmiles(smiles))
    params = all_chem.ETKDGv3()
    params.randomSeed = EMBED_SEED
    if all_chem.EmbedMolecule(mol, params) != 0:
        raise ValueError(f"RDKit could not embed {smiles}")
    all_chem.MMFFOptimizeMolecule(mol, maxIters=2000)
    conformer = mol.GetConformer()
    return [(atom.GetSymbol(), tuple(float(v) for v in conformer.GetAtomPosition(k)))
            for k, atom in enumerate(mol.GetAtoms())]


def hartree_fock(smiles: str) -> dict[str, float]:
    """RHF/STO-3G orbital energies (eV), dipole (debye) and energy (hartree)."""
    from pyscf import gto, scf

    mol = gto.M(atom=geometry(smiles), basis="sto-3g", verbose=0)
    mf = scf.RHF(mol)
    mf.conv_tol = 1e-10
    energy = mf.kernel()
    if not mf.converged:
        raise RuntimeError(f"Hartree-Fock did not converge for {smiles}")
    occupied = mol.nelectron // 2
    dipole = mf.dip_moment(verbose=0)
    return {"homo_ev": round(float(mf.mo_energy[occupied - 1]) * HARTREE_EV, 4),
            "lumo_ev": round(float(mf.mo_energy[occupied]) * HARTREE_EV, 4),
            "dipole_debye": round(float((dipole ** 2).sum() ** 0.5), 4),
            "energy_hartree": round(float(energy), 5)}


def _versions() -> str:
    import pyscf
    import rdkit

    return f"rdkit {rdkit.__version__}, pyscf {pyscf.__version__}"


def _cache_path(smiles: str):
    key = hashlib.sha256(f"{smiles}|{METHOD}|seed {EMBED_SEED}|{_versions()}".encode())
    return cache_dir("naturegym", "molecules") / f"{key.hexdigest()[:32]}.json"


def properties(smiles: str) -> dict[str, float]:
    """The molecule's Hartree-Fock properties, from the cache or computed (and cached)."""
    path = _cache_path(smiles)
    if path.is_file():
        try:
            cached = json.loads(path.read_text())
            if cached.get("smiles") == smiles:
                return {k: float(cached[k]) for k in
                        ("homo_ev", "lumo_ev", "dipole_debye", "energy_hartree")}
        except (ValueError, KeyError, TypeError):
            pass  # a damaged entry is recomputed
    values = hartree_fock(smiles)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"smiles": smiles, "method": METHOD,
                                   "versions": _versions(), **values}, sort_keys=True))
    os.replace(partial, path)  # atomic: a concurrent reader sees all or nothing
    return values


def load_pool() -> list[Molecule]:
    """Every pool molecule with its properties (computing what is not cached yet)."""
    chem, _ = _chem()
    pool = []
    for smiles, residue, group in pool_smiles():
        heavy = chem.MolFromSmiles(smiles).GetNumHeavyAtoms()
        pool.append(Molecule(smiles, residue, group, heavy, **properties(smiles)))
    return pool
