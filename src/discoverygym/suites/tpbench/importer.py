"""Import problems from the published TPBench table format.

The public TPBench problems come as a table, one row per problem, every field a string:
`problem_id` (the title), `domain`, `difficulty_level` ("1".."5"), `problem` (LaTeX
statement), `solution`, `answer` (boxed LaTeX), `code_answer_requirements` (the required
signature inside `\\begin{python}...\\end{python}`) and `reference_implementation` (the
expert's function, same wrapper). The table has no test inputs or tolerances, so the
importer derives them from the signature: every argument gets a type (from its
annotation, else float) and a range, taken from an optional sidecar file or inferred
conservatively (positive order-one values; angles inside (0, pi/2)); the test plan
always includes a sweep that varies each argument alone, so an answer that ignores an
argument the reference uses cannot pass.

Sidecar (YAML or JSON), keyed by `problem_id`:

    "Slow-roll spectral index":
      version: 2                    # default 1; bump when the row changes
      id: slow-roll-index           # default: slug of problem_id
      arguments:
        p: {type: float, range: [1, 4]}
        N: {range: [40, 70], scale: linear}
      tests: {seed: 3, samples: 10, require: ["N > 10 * p"], cases: [{p: 2, N: 60}]}
      tolerance: {rtol: 1.0e-6}

Tables: .json (a list of rows, or {"rows": [...]}), .jsonl, .csv, .parquet."""

from __future__ import annotations

import ast
import csv
import json
import re
from pathlib import Path
from typing import Any

import yaml

from .problem import (
    DEFAULT_SAMPLES,
    Problem,
    ProblemError,
    canonical_domain,
    problem_from_dict,
    safe_load_yaml,
)

TABLE_FIELDS = ("problem_id", "domain", "difficulty_level", "problem", "solution", "answer",
                "code_answer_requirements", "reference_implementation")
TABLE_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet")

_WRAPPER = re.compile(r"\\begin\{python\}(.*?)\\end\{python\}", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\r?\n(.*?)```", re.DOTALL)
_ANGLE_NAMES = re.compile(r"^(theta|phi|alpha|beta_angle|psi|chi|angle|incl|inclination)"
                          r"(_?\w*)?$", re.IGNORECASE)
_TYPE_NAMES = {"float": "float", "int": "int", "complex": "complex", "bool": "bool",
               "str": "str"}


def unwrap_code(text: str) -> str:
    """The Python code inside `\\begin{python}...\\end{python}` (or a fenced block);
    the text itself when it has no wrapper."""
    text = text or ""
    for pattern in (_WRAPPER, _FENCE):
        blocks = pattern.findall(text)
        if blocks:
            return "\n".join(b.strip("\n") for b in blocks)
    return text


def read_table(path: str | Path) -> list[dict[str, str]]:
    """Rows of a TPBench-format table (JSON, JSONL, CSV or Parquet)."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = data.get("rows") if isinstance(data, dict) else data
        elif suffix == ".jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                    if line.strip()]
        elif suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
        elif suffix == ".parquet":
            import pyarrow.parquet as pq

            rows = pq.read_table(path).to_pylist()
        else:
            raise ProblemError(f"{path}: unknown table type; use one of {TABLE_SUFFIXES}.")
    except (OSError, json.JSONDecodeError, csv.Error) as exc:
        raise ProblemError(f"{path}: cannot be read as a {suffix} table: {exc}") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ProblemError(f"{path}: expected a list of rows (objects).")
    for i, row in enumerate(rows):
        missing = [f for f in ("problem_id", "difficulty_level", "code_answer_requirements",
                               "reference_implementation", "problem") if not row.get(f)]
        if missing:
            raise ProblemError(f"{path}: row {i}: field '{missing[0]}' is missing or empty.")
    return rows


def slugify(text: str) -> str:
    """A problem id from a title: lower case, words joined by '-'."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:80] or "problem"


def _signature(code: str, where: str) -> tuple[str, list[tuple[str, str]]]:
    """(function name, [(argument, type)]) of the first function defined in `code`."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ProblemError(f"{where}: does not parse as Python ({exc.msg}).") from exc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = []
            for a in node.args.posonlyargs + node.args.args:
                annotation = ast.unparse(a.annotation) if a.annotation is not None else "float"
                args.append((a.arg, _TYPE_NAMES.get(annotation.split(".")[-1], "float")))
            return node.name, args
    raise ProblemError(f"{where}: defines no function.")


def infer_argument(name: str, type_: str) -> dict[str, Any]:
    """A conservative test range for an argument with no sidecar entry: positive,
    order-one values (masses, lengths, couplings); angles inside (0, pi/2); small
    positive integers. Strings cannot be inferred."""
    if type_ == "bool":
        return {"name": name, "type": "bool"}
    if type_ == "str":
        raise ValueError(f"argument '{name}' is a string: give its 'choices' in a sidecar")
    if type_ == "int":
        return {"name": name, "type": "int", "range": [1, 6]}
    if _ANGLE_NAMES.match(name):
        return {"name": name, "type": type_, "range": [0.1, 1.4]}
    spec: dict[str, Any] = {"name": name, "type": type_, "range": [0.5, 2.0]}
    if type_ == "complex":
        spec["imag_range"] = [-1.0, 1.0]
    return spec


def row_to_problem_data(row: dict[str, Any], sidecar: dict[str, Any] | None = None,
                        source: str = "table") -> dict[str, Any]:
    """The problem document (the YAML format) for one table row."""
    title = str(row["problem_id"]).strip()
    side = dict((sidecar or {}).get(title, {}))
    where = f"{source}: row '{title}'"
    requirements = unwrap_code(str(row.get("code_answer_requirements", "")))
    reference = unwrap_code(str(row["reference_implementation"]))
    function, signature = _signature(requirements, f"{where}: field "
                                     "'code_answer_requirements'")
    ref_function, ref_signature = _signature(reference, f"{where}: field "
                                             "'reference_implementation'")
    if ref_function != function or [a for a, _ in ref_signature] != [a for a, _ in signature]:
        raise ProblemError(f"{where}: the reference defines {ref_function}"
                           f"({', '.join(a for a, _ in ref_signature)}) but the requirements "
                           f"ask for {function}({', '.join(a for a, _ in signature)}).")
    declared = side.get("arguments", {}) or {}
    unknown = set(declared) - {a for a, _ in signature}
    if unknown:
        raise ProblemError(f"{where}: sidecar field 'arguments' names unknown arguments "
                           f"{sorted(unknown)}.")
    arguments = []
    for name, type_ in signature:
        given = dict(declared.get(name, {}))
        type_ = given.pop("type", type_)
        try:
            spec = infer_argument(name, type_) if not (
                "range" in given or "choices" in given) else {"name": name, "type": type_}
        except ValueError as exc:
            raise ProblemError(f"{where}: {exc}.") from exc
        spec.update(given)
        arguments.append(spec)
    tests = {"seed": 0, "samples": DEFAULT_SAMPLES, "sweep": True}
    tests.update(side.get("tests", {}) or {})
    try:
        level = int(str(row.get("difficulty_level", "")).strip())
    except ValueError as exc:
        raise ProblemError(f"{where}: field 'difficulty_level' must be 1-5, got "
                           f"{row.get('difficulty_level')!r}.") from exc
    data: dict[str, Any] = {
        "id": side.get("id", slugify(title)),
        "version": int(side.get("version", 1)),
        "title": title,
        "level": level,
        "domain": canonical_domain(str(row.get("domain") or "unspecified")),
        "statement": str(row["problem"]),
        "answer_requirements": requirements.strip(),
        "solution": str(row.get("solution") or "(no expert solution given)"),
        "answer": str(row.get("answer") or ""),
        "reference": reference,
        "function": function,
        "arguments": arguments,
        "tests": tests,
        "metadata": {"origin": f"imported from {source}",
                     "comments": "test inputs derived by the tpbench importer"},
    }
    for key in ("tolerance", "limits", "plausible_wrong", "wrong_explanation", "wrong_answers",
                "independent_check"):
        if key in side:
            data[key] = side[key]
    return data


def load_sidecar(path: str | Path | None) -> dict[str, Any]:
    """The sidecar mapping (problem_id -> settings); {} when there is none."""
    if path is None:
        return {}
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else safe_load_yaml(text)
    except (OSError, yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ProblemError(f"{path}: cannot read the sidecar: {exc}") from exc
    if not isinstance(data, dict):
        raise ProblemError(f"{path}: a sidecar maps problem_id to settings.")
    return data


def default_sidecar(table: Path) -> Path | None:
    """`<table stem>.sidecar.yaml` (or .yml/.json) next to the table, if present."""
    for suffix in (".sidecar.yaml", ".sidecar.yml", ".sidecar.json"):
        candidate = table.with_name(table.stem + suffix)
        if candidate.exists():
            return candidate
    return None


def import_table(path: str | Path, sidecar: str | Path | None = None) -> list[Problem]:
    """Validated problems from a TPBench-format table (sidecar: explicit, or the one
    next to the table)."""
    path = Path(path)
    side = load_sidecar(sidecar if sidecar is not None else default_sidecar(path))
    problems = []
    for row in read_table(path):
        data = row_to_problem_data(row, side, source=path.name)
        problems.append(problem_from_dict(data, source=f"{path}#{data['id']}"))
    ids = [p.id for p in problems]
    if len(set(ids)) != len(ids):
        raise ProblemError(f"{path}: two rows give the same id; set 'id' in the sidecar.")
    return problems


def write_problem_files(path: str | Path, out_dir: str | Path,
                        sidecar: str | Path | None = None) -> list[Path]:
    """Import a table and write one problem YAML file per row into `out_dir` (the
    directory can then be run with `--problems` or checked with `tpbench check`)."""
    path, out_dir = Path(path), Path(out_dir)
    import_table(path, sidecar)  # validates every row (and the ids) before writing
    side = load_sidecar(sidecar if sidecar is not None else default_sidecar(path))
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for row in read_table(path):
        data = row_to_problem_data(row, side, source=path.name)
        target = out_dir / f"{data['id']}.yaml"
        target.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
                          encoding="utf-8")
        written.append(target)
    return written
