"""Importing the published TPBench table format: a fixture written by hand from the
format description (JSON, JSONL, CSV and Parquet), test inputs derived from the
signature, and verification of the imported problems."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from discoverygym.suites.tpbench import TPBenchSuite, problem_set
from discoverygym.suites.tpbench.check import check_problems
from discoverygym.suites.tpbench.importer import (
    import_table,
    infer_argument,
    read_table,
    write_problem_files,
)
from discoverygym.suites.tpbench.inputs import generate_inputs
from discoverygym.suites.tpbench.problem import ProblemError
from discoverygym.suites.tpbench.verifier import verify

ROWS = [
    {
        "problem_id": "Slow-roll spectral index of a monomial potential",
        "domain": "Cosmology",
        "difficulty_level": "2",
        "problem": r"Inflation is driven by $V(\phi) = \lambda \phi^p$. In the slow-roll "
                   r"approximation, find the scalar spectral index $n_s$ for modes that left "
                   r"the horizon $N$ e-folds before the end of inflation (take "
                   r"$\phi_{\rm end}$ negligible).",
        "solution": r"$\epsilon = p^2/(2\phi^2)$, $\eta = p(p-1)/\phi^2$ (reduced Planck "
                    r"units) and $\phi^2 = 2pN$, so $n_s = 1 - 6\epsilon + 2\eta "
                    r"= 1 - (p+2)/(2N)$.",
        "answer": r"$\boxed{n_s = 1 - \frac{p+2}{2N}}$",
        "code_answer_requirements": "\\begin{python}\ndef spectral_index(p: float, N: float)"
                                    " -> float:\n    ...\n\\end{python}",
        "reference_implementation": "\\begin{python}\ndef spectral_index(p: float, N: float)"
                                    " -> float:\n    return 1 - (p + 2) / (2 * N)\n"
                                    "\\end{python}",
    },
    {
        "problem_id": "Transmission over a potential step",
        "domain": "Quantum Mechanics",
        "difficulty_level": "1",
        "problem": r"A particle of mass $m$ and energy $E$ meets a step of height $V_0$ "
                   r"($\hbar = 1$). Give the transmission probability.",
        "solution": r"For $E > V_0$: $T = 4k_1k_2/(k_1+k_2)^2$ with $k_1 = \sqrt{2mE}$, "
                    r"$k_2 = \sqrt{2m(E-V_0)}$; for $E \le V_0$, $T = 0$.",
        "answer": r"$\boxed{T = \frac{4k_1k_2}{(k_1+k_2)^2}}$",
        "code_answer_requirements": "\\begin{python}\ndef transmission(E: float, V0: float, "
                                    "m: float) -> float:\n    pass\n\\end{python}",
        "reference_implementation": "\\begin{python}\nimport math\n\ndef transmission(E: float,"
                                    " V0: float, m: float) -> float:\n    if E <= V0:\n"
                                    "        return 0.0\n    k1 = math.sqrt(2 * m * E)\n"
                                    "    k2 = math.sqrt(2 * m * (E - V0))\n"
                                    "    return 4 * k1 * k2 / (k1 + k2) ** 2\n\\end{python}",
    },
]
SIDECAR = {"Slow-roll spectral index of a monomial potential": {
    "id": "slow-roll-index", "version": 2,
    "arguments": {"p": {"range": [1.0, 4.0]}, "N": {"range": [40.0, 70.0]}},
    "tests": {"seed": 4, "samples": 6, "cases": [{"p": 2.0, "N": 60.0}]},
    "tolerance": {"rtol": 1e-9, "atol": 0.0},
}}


def write_table(directory, fmt: str):
    path = directory / f"public.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(ROWS))
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    elif fmt == "csv":
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(ROWS[0]))
            writer.writeheader()
            writer.writerows(ROWS)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(ROWS), path)
    (directory / "public.sidecar.yaml").write_text(yaml.safe_dump(SIDECAR))
    return path


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    return write_table(tmp_path_factory.mktemp("table"), "json")


def answer(code: str) -> str:
    return f"Derivation.\n\n```python\n{code}\n```\n"


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "parquet"])
def test_every_format_reads_the_same_rows(tmp_path, fmt):
    path = write_table(tmp_path, fmt)
    assert read_table(path) == ROWS
    problems = import_table(path)
    assert [p.id for p in problems] == ["slow-roll-index", "transmission-over-a-potential-step"]
    assert [p.version for p in problems] == [2, 1] and [p.level for p in problems] == [2, 1]
    assert problems[1].domain == "quantum_mechanics"


def test_inputs_come_from_the_signature_and_sidecar(table):
    index, step = import_table(table)
    assert index.function == "spectral_index" and index.rtol == 1e-9
    assert [a.range for a in index.arguments] == [(1.0, 4.0), (40.0, 70.0)]
    # no sidecar entry: conservative positive order-one ranges, every argument swept
    assert [a.range for a in step.arguments] == [(0.5, 2.0)] * 3
    swept = {i.label.split()[1] for i in generate_inputs(step) if i.label.startswith("sweep")}
    assert swept == {"E", "V0", "m"}
    assert infer_argument("theta", "float")["range"] == [0.1, 1.4]
    assert infer_argument("n", "int")["range"] == [1, 6]
    with pytest.raises(ValueError, match="choices"):
        infer_argument("gauge", "str")


def test_imported_reference_passes_and_ignoring_an_argument_fails(table):
    index, step = import_table(table)
    assert verify(index, index.reference_solution_text()).verdict == "correct"
    assert verify(step, step.reference_solution_text()).verdict == "correct"
    fixed_n = "def spectral_index(p, N):\n    return 1 - (p + 2) / 120.0"
    assert verify(index, answer(fixed_n)).verdict == "wrong"
    no_step = ("import math\ndef transmission(E, V0, m):\n    k1 = math.sqrt(2 * m * E)\n"
               "    k2 = math.sqrt(2 * m * max(E - 0.5, 0.0))\n"
               "    return 4 * k1 * k2 / (k1 + k2) ** 2")
    assert verify(step, answer(no_step)).verdict == "wrong"


def test_written_problem_files_check_clean(table, tmp_path):
    written = write_problem_files(table, tmp_path / "imported")
    assert sorted(p.name for p in written) == ["slow-roll-index.yaml",
                                               "transmission-over-a-potential-step.yaml"]
    report = check_problems(tmp_path / "imported")
    assert report["ok"] and report["n_ok"] == 2


def test_table_runs_as_a_problem_set(table):
    suite = TPBenchSuite()
    assert [t.id for t in suite.tasks(str(table))] == [p.id for p in problem_set(str(table))]
    specs = suite.episodes(problems=str(table), seeds=range(2))
    assert len(specs) == 4 and {s.seed for s in specs} == {0, 1}
    episode = suite.episode("slow-roll-index", seed=1, problems=str(table))
    assert "spectral_index" in episode.prompt and "(p + 2)" not in episode.prompt


def test_bad_rows_name_the_row_and_field(tmp_path):
    bad = [dict(ROWS[0], difficulty_level="hard")]
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(ProblemError, match="difficulty_level"):
        import_table(tmp_path / "bad.json")
    bad = [dict(ROWS[0], reference_implementation="def other(p, N):\n    return 0")]
    (tmp_path / "bad2.json").write_text(json.dumps(bad))
    with pytest.raises(ProblemError, match="the reference defines other"):
        import_table(tmp_path / "bad2.json")
    (tmp_path / "bad3.json").write_text(json.dumps([{"problem_id": "x"}]))
    with pytest.raises(ProblemError, match=r"row 0: field 'difficulty_level'"):
        import_table(tmp_path / "bad3.json")
