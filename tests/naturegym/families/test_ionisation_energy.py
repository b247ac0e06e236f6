"""The ionisation-energy family: the Hartree-Fock pool checked against published
references, its cache, the frozen Tanimoto kernel ridge regression against
scikit-learn and RDKit, the references of a draw, and a generated package verified byte
for byte."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="the ionisation-energy family needs the 'chem' extra")
pytest.importorskip("pyscf", reason="the ionisation-energy family needs the 'chem' extra")

from discoverygym.naturegym.families import get_family  # noqa: E402
from discoverygym.naturegym.families.molecular_design import (  # noqa: E402
    ionisation_energy as ie,
)
from discoverygym.naturegym.families.molecular_design import molecule_pool as mp  # noqa: E402
from discoverygym.naturegym.families.molecular_design import tanimoto_krr as tk  # noqa: E402
from discoverygym.naturegym.metrics import score_outputs  # noqa: E402


def test_hartree_fock_matches_the_textbook_water_value():
    # Szabo and Ostlund, Modern Quantum Chemistry, table 3.13: RHF/STO-3G water at the
    # experimental geometry, -74.963 hartree.
    from pyscf import gto, scf

    mol = gto.M(atom="O 0 0 0; H 0.7572 0.5865 0; H -0.7572 0.5865 0", basis="sto-3g",
                verbose=0)
    assert scf.RHF(mol).kernel() == pytest.approx(-74.963, abs=2e-3)


def test_geometry_and_koopmans_energies_are_chemically_right():
    atoms = mp.geometry("CO")  # methanol: C-O 1.43 A (microwave value 1.427 A)
    carbon, oxygen = (np.array(p) for s, p in atoms if s in "CO")
    assert np.linalg.norm(carbon - oxygen) == pytest.approx(1.427, abs=0.02)
    assert atoms == mp.geometry("CO")  # the fixed seed: the same conformer every time
    methanol, methylamine = mp.hartree_fock("CO"), mp.hartree_fock("CN")
    # Koopmans' energies rank like the measured ones (methanol 10.8 eV > methylamine
    # 9.0 eV) and fall within 2 eV of them at this minimal basis.
    assert -methanol["homo_ev"] > -methylamine["homo_ev"]
    assert abs(-methanol["homo_ev"] - 10.85) < 2.0 and abs(-methylamine["homo_ev"] - 8.97) < 2
    assert methanol["lumo_ev"] > methanol["homo_ev"]
    assert methanol["dipole_debye"] == pytest.approx(1.7, abs=0.5)  # measured 1.70 D


def test_pool_is_fixed_small_and_each_molecule_carries_its_group():
    from rdkit import Chem

    pool = mp.pool_smiles()
    assert len(pool) == 87 and len({s for s, _, _ in pool}) == len(pool)
    patterns = {"hydroxyl": "[OX2H]", "amine": "[NX3H2]", "fluoride": "F", "chloride": "Cl",
                "nitrile": "C#N", "aldehyde": "[CX3H1]=O", "ketone": "[#6][CX3](=O)[#6]",
                "carboxylic acid": "C(=O)[OH]", "methyl ether": "[CH3]O[#6]",
                "amide": "C(=O)[NH2]"}
    for smiles, _residue, group in pool:
        mol = Chem.MolFromSmiles(smiles)
        assert mol.GetNumHeavyAtoms() <= mp.MAX_HEAVY_ATOMS
        assert mol.HasSubstructMatch(Chem.MolFromSmarts(patterns[group])), (smiles, group)


def test_properties_are_cached_per_molecule_and_a_damaged_entry_is_recomputed(monkeypatch):
    first = mp.properties("CF")
    path = mp._cache_path("CF")
    assert path.is_file() and json.loads(path.read_text())["smiles"] == "CF"
    monkeypatch.setattr(mp, "hartree_fock", lambda smiles: pytest.fail("recomputed"))
    assert mp.properties("CF") == first
    path.write_text("{not json")
    monkeypatch.setattr(mp, "hartree_fock", lambda smiles: {**first, "homo_ev": -1.0})
    assert mp.properties("CF")["homo_ev"] == -1.0
    assert "pyscf" in mp._versions() and "rdkit" in mp._versions()


def test_tanimoto_on_counts_is_rdkits():
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    smiles = ["CCO", "CCCO", "c1ccccc1C#N", "CC(C)(C)Cl"]
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=1, fpSize=2048)
    sparse = [generator.GetCountFingerprint(Chem.MolFromSmiles(s)) for s in smiles]
    ours = tk.tanimoto(tk.fingerprints(smiles), tk.fingerprints(smiles))
    for i, a in enumerate(sparse):
        for j, b in enumerate(sparse):
            assert ours[i, j] == pytest.approx(DataStructs.TanimotoSimilarity(a, b))


def test_krr_is_scikit_learns_with_the_leave_one_out_choice():
    kernel_ridge = pytest.importorskip("sklearn.kernel_ridge")
    train = [s for s, _, _ in mp.pool_smiles()[:30]]
    query = [s for s, _, _ in mp.pool_smiles()[30:40]]
    values = np.random.default_rng(0).normal(10.0, 1.0, len(train))
    ours = tk.krr_predict(train, values, query)
    known, asked = tk.fingerprints(train), tk.fingerprints(query)
    kernel = tk.tanimoto(known, known)

    def brute_loo(regulariser):  # refit without each molecule in turn
        errors = []
        for k in range(len(train)):
            keep = np.arange(len(train)) != k
            model = kernel_ridge.KernelRidge(alpha=regulariser, kernel="precomputed")
            model.fit(kernel[np.ix_(keep, keep)], values[keep] - values.mean())
            guess = model.predict(kernel[k:k + 1, keep])[0] + values.mean()
            errors.append((guess - values[k]) ** 2)
        return np.mean(errors)

    best = min(tk.REGULARISERS, key=brute_loo)
    model = kernel_ridge.KernelRidge(alpha=best, kernel="precomputed")
    model.fit(kernel, values - values.mean())
    expected = model.predict(tk.tanimoto(asked, known)) + values.mean()
    assert ours == pytest.approx(expected, rel=1e-9)


def _fake_pool(n: int = 87) -> list[mp.Molecule]:
    """Real pool molecules with made-up orbital energies (no quantum chemistry)."""
    rng = np.random.default_rng(1)
    return [mp.Molecule(s, r, g, 5, float(rng.uniform(-11.0, -8.0)), 3.0, 1.0, -100.0)
            for s, r, g in mp.pool_smiles()[:n]]


def test_a_draw_is_deterministic_and_its_references_score_as_designed(monkeypatch, tmp_path):
    pool = _fake_pool()
    monkeypatch.setattr(ie, "load_pool", lambda: pool)
    family = get_family("ionisation-energy")
    a, b = family.draw(np.random.default_rng(3)), family.draw(np.random.default_rng(3))
    assert (a.data, a.truth, a.hidden, a.outputs) == (b.data, b.truth, b.hidden, b.outputs)
    assert set(a.hidden) == {"slope", "offset_ev", *(ie.group_key(g) for g in mp.GROUPS)}
    query = (a.data["query.csv"].decode().split()[1:])
    by_smiles = {m.smiles: m for m in pool}
    oracle = ie.calibrated([by_smiles[s] for s in query], a.hidden)
    written = [float(line.split(",")[1]) for line in
               a.outputs["oracle"]["prediction.csv"].decode().split()[1:]]
    assert written == list(oracle)  # the oracle is the calibration, at full precision
    scores = score_outputs(family.record_metric(), a.truth, a.outputs)
    assert scores["oracle"] < min(scores["sota"], scores["baseline"])
    assert 0.3 * a.floor < scores["oracle"] < 2.5 * a.floor
    data = tmp_path / "data"
    data.mkdir()
    for name, content in a.data.items():
        (data / name).write_bytes(content)
    assert family.baseline_outputs(data) == a.outputs["baseline"]
    answers = family.no_science_outputs(data)
    assert set(answers) == {"constant", "training-mean", "nearest-neighbour"}
    for name, value in score_outputs(family.record_metric(), a.truth, answers).items():
        assert isinstance(value, float) and value > scores["oracle"], (name, value)


def test_measured_values_have_a_fixed_width_so_file_sizes_say_nothing(monkeypatch):
    monkeypatch.setattr(ie, "load_pool", _fake_pool)
    draw = get_family("ionisation-energy").draw(np.random.default_rng(4))
    values = [line.split(",")[1] for line in draw.data["measured.csv"].decode().split()[1:]]
    assert {len(v) for v in values} == {6}


def test_missing_extra_refuses_in_one_line(monkeypatch):
    from discoverygym.naturegym.families import ExtraMissing

    family = get_family("ionisation-energy")
    assert family.extra == "chem" and not family.missing_modules()
    monkeypatch.setitem(sys.modules, "rdkit", None)
    with pytest.raises(ImportError, match="'chem' extra"):
        mp.pool_smiles()
    monkeypatch.setattr(type(family), "libraries", ("numpy", "pyscf-not-installed"))
    with pytest.raises(ExtraMissing, match=r"discoverygym\[chem\]"):
        family.require_libraries()


@pytest.mark.slow
def test_generate_one_package_and_verify_it_byte_for_byte(tmp_path):
    # computes the whole pool once into this session's cache (about 45 s of CPU)
    from discoverygym.core.keys import new_key
    from discoverygym.naturegym import generate as gen
    from discoverygym.naturegym.release import ReleaseMismatch, verify_release

    key = new_key()
    gen.generate("ionisation-energy", 1, tmp_path / "out", key)
    assert verify_release(tmp_path / "out", key)["count"] == 1
    with pytest.raises(ReleaseMismatch):
        verify_release(tmp_path / "out", new_key())
    problem = next(p for p in (tmp_path / "out").iterdir() if p.is_dir()) / "problem"
    text = " ".join(p.read_text() for p in problem.rglob("*") if p.is_file())
    assert "Tanimoto" not in text and "STO-3G" not in text and "slope" not in text


def test_draw_data_is_the_draws_data_without_the_references(monkeypatch):
    monkeypatch.setattr(ie, "load_pool", _fake_pool)
    family = get_family("ionisation-energy")
    full, light = (f(np.random.default_rng(8)) for f in (family.draw, family.draw_data))
    assert (light.data, light.hidden, light.floor) == (full.data, full.hidden, full.floor)
    assert light.outputs == {} and full.outputs


@pytest.mark.parametrize("content, fragment", [
    (b"smiles,ionisation_energy_ev\n", "rows"),
    (b"\xff\xfe\x00garbage", "readable"),
    (b"NAN_ROWS", "not finite"),
    (b"HUGE_ROWS", "not finite"),
    (b"WRONG_SMILES", "does not match"),
])
def test_hostile_answers_fail_that_set_and_never_crash(monkeypatch, content, fragment):
    monkeypatch.setattr(ie, "load_pool", _fake_pool)
    family = get_family("ionisation-energy")
    draw = family.draw(np.random.default_rng(6))
    query = draw.data["query.csv"].decode().split()[1:]
    rows = {b"NAN_ROWS": [f"{s},nan" for s in query],
            b"HUGE_ROWS": [f"{s},1e400" for s in query],
            b"WRONG_SMILES": [f"C{s},10.0" for s in query]}
    if content in rows:
        content = ("smiles,ionisation_energy_ev\n" + "\n".join(rows[content]) + "\n").encode()
    result = score_outputs(family.record_metric(), draw.truth,
                           {"hostile": {"prediction.csv": content}})["hostile"]
    assert isinstance(result, str) and fragment in result, result
