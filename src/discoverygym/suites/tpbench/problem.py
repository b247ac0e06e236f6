"""The tpbench problem format: one YAML (or JSON) file per problem, validated on load.

A problem states the physics, the exact Python function an answer must define
(name, arguments with meanings and units), the expert's reference function, the
test plan (explicit argument sets for edge regimes plus seeded samples over declared
ranges) and the comparison tolerance. See the suite README for the full format."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .conditions import check_conditions

#: Domains of the shipped problem set (imported problems may name others).
DOMAINS = (
    "classical_mechanics", "electromagnetism", "quantum_mechanics", "statistical_mechanics",
    "general_relativity", "cosmology", "quantum_field_theory",
)
ARG_TYPES = ("float", "int", "complex", "bool", "str")
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8
DEFAULT_SAMPLES = 12

_ARGUMENT_SCHEMA = {
    "type": "object",
    "required": ["name", "type"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "type": {"enum": list(ARG_TYPES)},
        "meaning": {"type": "string"},
        "range": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        "imag_range": {"type": "array", "items": {"type": "number"}, "minItems": 2,
                       "maxItems": 2},
        "scale": {"enum": ["linear", "log"]},
        "choices": {"type": "array", "minItems": 1},
    },
}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "version", "title", "level", "domain", "statement",
                 "answer_requirements", "solution", "reference", "function", "arguments",
                 "tests"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]*$"},
        "version": {"type": "integer", "minimum": 1},
        "title": {"type": "string", "minLength": 1},
        "level": {"type": "integer", "minimum": 1, "maximum": 5},
        "domain": {"type": "string", "minLength": 1},
        "statement": {"type": "string", "minLength": 1},
        "answer_requirements": {"type": "string", "minLength": 1},
        "solution": {"type": "string", "minLength": 1},
        "answer": {"type": "string"},
        "reference": {"type": "string", "minLength": 1},
        "plausible_wrong": {"type": "string", "minLength": 1},
        "wrong_explanation": {"type": "string"},
        "wrong_answers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["explanation", "code"],
                "additionalProperties": False,
                "properties": {"explanation": {"type": "string", "minLength": 1},
                               "code": {"type": "string", "minLength": 1}},
            },
        },
        "independent_check": {
            "type": "object",
            "required": ["method", "code"],
            "additionalProperties": False,
            "properties": {
                "method": {"type": "string", "minLength": 1},
                "code": {"type": "string", "minLength": 1},
                "tolerance": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"rtol": {"type": "number", "minimum": 0},
                                   "atol": {"type": "number", "minimum": 0}},
                },
            },
        },
        "function": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
        "arguments": {"type": "array", "items": _ARGUMENT_SCHEMA},
        "returns": {"type": "string"},
        "tests": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "seed": {"type": "integer", "minimum": 0},
                "samples": {"type": "integer", "minimum": 0, "maximum": 500},
                "cases": {"type": "array", "items": {"type": "object"}},
                "require": {"type": "array", "items": {"type": "string"}},
                "sweep": {"type": "boolean"},
            },
        },
        "tolerance": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"rtol": {"type": "number", "minimum": 0},
                           "atol": {"type": "number", "minimum": 0}},
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"time_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
                           "memory_mb": {"type": "integer", "minimum": 64}},
        },
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "authors": {"type": "array", "items": {"type": "string"}},
                "reviewers": {"type": "array", "items": {"type": "string"}},
                "origin": {"type": "string"},
                "novelty": {"type": "string"},
                "date_added": {"type": "string"},
                "variation_of": {"type": ["string", "null"]},
                "comments": {"type": "string"},
                "independent_check": {"type": "string"},
            },
        },
    },
}


#: Spellings of domains in published TPBench tables and user files -> the suite's names.
DOMAIN_ALIASES = {
    "qm": "quantum_mechanics", "quantum": "quantum_mechanics",
    "qft": "quantum_field_theory", "hep": "quantum_field_theory",
    "hep_th": "quantum_field_theory", "high_energy_theory": "quantum_field_theory",
    "high_energy_physics": "quantum_field_theory", "particle_physics": "quantum_field_theory",
    "cm": "classical_mechanics", "mechanics": "classical_mechanics",
    "em": "electromagnetism", "e_m": "electromagnetism", "electrodynamics": "electromagnetism",
    "electricity_and_magnetism": "electromagnetism",
    "gr": "general_relativity", "relativity": "general_relativity",
    "cosmo": "cosmology", "astrophysics_and_cosmology": "cosmology",
    "sm": "statistical_mechanics", "stat_mech": "statistical_mechanics",
    "statmech": "statistical_mechanics", "stat_phys": "statistical_mechanics",
    "statistical_physics": "statistical_mechanics", "thermodynamics": "statistical_mechanics",
}
#: Independent-check tolerance when a problem states none (the check is a different
#: numerical route, so it rarely agrees to the verifier's default tolerance).
DEFAULT_CHECK_RTOL = 1e-6
DEFAULT_CHECK_ATOL = 1e-12


def canonical_domain(name: str) -> str:
    """The suite's name of a domain: lower case, words joined by '_', published
    abbreviations expanded ("QFT" -> "quantum_field_theory", "stat mech" ->
    "statistical_mechanics"); an unknown name is returned normalised."""
    key = re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_")
    return DOMAIN_ALIASES.get(key, key)


class ProblemError(ValueError):
    """A problem file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Argument:
    """One argument of the required function and how tests sample it."""

    name: str
    type: str
    meaning: str = ""
    range: tuple[float, float] | None = None
    imag_range: tuple[float, float] | None = None
    scale: str = "linear"
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class TestPlan:
    """Explicit argument sets (edge regimes) plus `samples` seeded draws over the
    argument ranges that satisfy every `require` condition (e.g. "d > R")."""

    __test__ = False  # not a pytest test class

    seed: int = 0
    samples: int = DEFAULT_SAMPLES
    cases: tuple[dict[str, Any], ...] = ()
    require: tuple[str, ...] = ()
    sweep: bool = False  # vary each argument alone around a base point as well


@dataclass(frozen=True)
class WrongAnswer:
    """A believable mistake (sign slip, factor 2, missing term, wrong branch): code that
    defines the required function and must fail the test plan."""

    explanation: str
    code: str


@dataclass(frozen=True)
class IndependentCheck:
    """Code that computes the answer by a route other than the reference's closed form
    (quadrature, ODE integration, series, a limit...), with the tolerance within which
    it must agree with the reference on every test input."""

    method: str
    code: str
    rtol: float = DEFAULT_CHECK_RTOL
    atol: float = DEFAULT_CHECK_ATOL


@dataclass(frozen=True)
class Problem:
    """A validated problem. `key` ("id@vN") identifies the version records carry."""

    id: str
    version: int
    title: str
    level: int
    domain: str
    statement: str
    answer_requirements: str
    solution: str
    reference: str
    function: str
    arguments: tuple[Argument, ...]
    tests: TestPlan
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    time_limit_s: float = 10.0
    memory_mb: int = 1024
    answer: str = ""
    returns: str = ""
    wrong_answers: tuple[WrongAnswer, ...] = ()
    independent_check: IndependentCheck | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def key(self) -> str:
        return f"{self.id}@v{self.version}"

    def reference_solution_text(self) -> str:
        """The expert solution written as a response: derivation, then the code block."""
        return f"{self.solution.strip()}\n\n```python\n{self.reference.strip()}\n```\n"

    @property
    def plausible_wrong(self) -> str | None:
        """The code of the first wrong answer (None when the problem has none)."""
        return self.wrong_answers[0].code if self.wrong_answers else None

    @property
    def wrong_explanation(self) -> str:
        return self.wrong_answers[0].explanation if self.wrong_answers else ""

    def wrong_solution_text(self, index: int = 0) -> str:
        """A response built on wrong answer `index` (empty code when there is none)."""
        code = (self.wrong_answers[index].code if index < len(self.wrong_answers) else ""
                ).strip()
        return f"A derivation with a plausible error.\n\n```python\n{code}\n```\n"

    def content_hash(self) -> str:
        """A hash of everything that determines the reference outputs."""
        import hashlib

        payload = json.dumps({
            "id": self.id, "version": self.version, "reference": self.reference,
            "function": self.function,
            "arguments": [a.__dict__ for a in self.arguments],
            "tests": {"seed": self.tests.seed, "samples": self.tests.samples,
                      "cases": list(self.tests.cases), "require": list(self.tests.require),
                      "sweep": self.tests.sweep},
        }, sort_keys=True, default=repr)
        return hashlib.sha256(payload.encode()).hexdigest()


    def fingerprint(self) -> str:
        """A hash of everything a solver or the verifier sees (statement, requirements,
        reference, arguments, tests, tolerance, limits). A change to it must come with a
        version bump; `tests/suites/tpbench/test_tpbench_suite.py` enforces that for the shipped set."""
        import hashlib

        payload = json.dumps({
            "content": self.content_hash(), "statement": self.statement,
            "answer_requirements": self.answer_requirements, "rtol": self.rtol,
            "atol": self.atol, "time_limit_s": self.time_limit_s, "memory_mb": self.memory_mb,
        }, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


FINGERPRINTS_FILE = "_fingerprints.json"


def write_fingerprints(directory: str | Path) -> Path:
    """Record `id@vN -> fingerprint` for every problem of a directory (run after adding
    a problem or bumping a version; see the README)."""
    directory = Path(directory)
    table = {p.key: p.fingerprint() for p in load_problems(directory)}
    path = directory / FINGERPRINTS_FILE
    path.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _field_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def problem_from_dict(data: Any, source: str = "<memory>") -> Problem:
    """Validate a parsed problem document and build the Problem. Raises ProblemError
    naming the source and the offending field."""
    if not isinstance(data, dict):
        raise ProblemError(f"{source}: a problem must be a mapping of fields, "
                           f"got {type(data).__name__}.")
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        raise ProblemError(f"{source}: field '{_field_path(first)}': {first.message}")

    arguments = []
    for i, raw in enumerate(data["arguments"]):
        arg = Argument(
            name=raw["name"], type=raw["type"], meaning=raw.get("meaning", ""),
            range=tuple(raw["range"]) if "range" in raw else None,
            imag_range=tuple(raw["imag_range"]) if "imag_range" in raw else None,
            scale=raw.get("scale", "linear"),
            choices=tuple(raw["choices"]) if "choices" in raw else None,
        )
        where = f"{source}: field 'arguments.{i}'"
        if arg.type in ("float", "int", "complex") and arg.range is None and arg.choices is None:
            raise ProblemError(f"{where}: a {arg.type} argument needs a 'range' or 'choices'.")
        if arg.type == "str" and arg.choices is None:
            raise ProblemError(f"{where}: a str argument needs 'choices'.")
        if arg.range is not None and arg.range[0] > arg.range[1]:
            raise ProblemError(f"{where}.range: lower bound exceeds upper bound.")
        if arg.scale == "log" and arg.range is not None and arg.range[0] <= 0:
            raise ProblemError(f"{where}.scale: a log scale needs a positive range.")
        arguments.append(arg)
    names = [a.name for a in arguments]
    if len(set(names)) != len(names):
        raise ProblemError(f"{source}: field 'arguments': argument names repeat: {names}.")

    for key in ("reference", "plausible_wrong"):
        if key in data:
            _check_defines(data[key], data["function"], names, f"{source}: field '{key}'")
    wrong_answers = [WrongAnswer(w["explanation"].strip(), w["code"])
                     for w in data.get("wrong_answers", [])]
    for i, wrong in enumerate(wrong_answers):
        _check_defines(wrong.code, data["function"], names,
                       f"{source}: field 'wrong_answers.{i}.code'")
    if "plausible_wrong" in data:
        # the format before wrong_answers: one mistake, read as the first entry
        wrong_answers.insert(0, WrongAnswer(
            data.get("wrong_explanation", "").strip() or "(no explanation given)",
            data["plausible_wrong"]))
    check = None
    if "independent_check" in data:
        raw_check = data["independent_check"]
        _check_defines(raw_check["code"], data["function"], names,
                       f"{source}: field 'independent_check.code'")
        check_tol = raw_check.get("tolerance", {})
        check = IndependentCheck(raw_check["method"].strip(), raw_check["code"],
                                 rtol=float(check_tol.get("rtol", DEFAULT_CHECK_RTOL)),
                                 atol=float(check_tol.get("atol", DEFAULT_CHECK_ATOL)))

    tests_raw = data["tests"]
    for i, case in enumerate(tests_raw.get("cases", [])):
        missing = set(names) - set(case)
        extra = set(case) - set(names)
        if missing or extra:
            raise ProblemError(
                f"{source}: field 'tests.cases.{i}': case must give exactly the arguments "
                f"{names}; missing {sorted(missing)}, unknown {sorted(extra)}.")
    plan = TestPlan(seed=int(tests_raw.get("seed", 0)),
                    samples=int(tests_raw.get("samples", DEFAULT_SAMPLES)),
                    cases=tuple(dict(c) for c in tests_raw.get("cases", [])),
                    require=tuple(tests_raw.get("require", [])),
                    sweep=bool(tests_raw.get("sweep", False)))
    if plan.samples and not all(a.range is not None or a.choices is not None or a.type == "bool"
                                for a in arguments):
        raise ProblemError(f"{source}: field 'arguments': sampled tests need a range or choices "
                           "for every argument.")

    try:
        check_conditions(plan.require, names)
    except ValueError as exc:
        raise ProblemError(f"{source}: field 'tests.require': {exc}") from exc
    if not plan.cases and not plan.samples and not plan.sweep:
        raise ProblemError(f"{source}: field 'tests': no cases and no samples; nothing to test.")

    tol = data.get("tolerance", {})
    limits = data.get("limits", {})
    return Problem(
        id=data["id"], version=int(data["version"]), title=data["title"],
        level=int(data["level"]), domain=canonical_domain(data["domain"]), statement=data["statement"],
        answer_requirements=data["answer_requirements"], solution=data["solution"],
        reference=data["reference"], function=data["function"], arguments=tuple(arguments),
        tests=plan, rtol=float(tol.get("rtol", DEFAULT_RTOL)),
        atol=float(tol.get("atol", DEFAULT_ATOL)),
        time_limit_s=float(limits.get("time_s", 10.0)),
        memory_mb=int(limits.get("memory_mb", 1024)),
        answer=data.get("answer", ""), returns=data.get("returns", ""),
        wrong_answers=tuple(wrong_answers), independent_check=check,
        metadata=dict(data.get("metadata", {})), source=source,
    )


def _check_defines(code: str, function: str, names: list[str], where: str) -> None:
    """The code must parse and define `function` with exactly the declared arguments."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise ProblemError(f"{where}: does not parse as Python ({exc.msg}, line {exc.lineno})."
                           ) from exc
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            got = [a.arg for a in node.args.posonlyargs + node.args.args]
            if got != names:
                raise ProblemError(f"{where}: {function} takes {got}, but 'arguments' declares "
                                   f"{names}.")
            return
    raise ProblemError(f"{where}: defines no top-level function '{function}'.")


#: libyaml's safe loader where PyYAML was built with it (17 times faster on the shipped
#: problems, which it reads alike; tests/suites/tpbench compares the two), else PyYAML's.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load_yaml(text: str) -> Any:
    """yaml.safe_load, with libyaml where it is built in."""
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader either way


def load_problem(path: str | Path) -> Problem:
    """Load and validate one problem file (.yaml, .yml or .json)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProblemError(f"{path}: cannot be read ({exc.strerror}).") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else safe_load_yaml(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ProblemError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: "
                           f"{exc}") from exc
    problem = problem_from_dict(data, source=str(path))
    if path.stem != problem.id:
        raise ProblemError(f"{path}: field 'id': '{problem.id}' must match the file name "
                           f"'{path.stem}'.")
    return problem


def problem_files(directory: str | Path) -> list[Path]:
    """The problem files of a directory, sorted by name."""
    directory = Path(directory)
    if not directory.exists():  # say so, rather than what it would have to be
        raise ProblemError(f"{directory}: no such file or directory.")
    if not directory.is_dir():
        raise ProblemError(f"{directory}: not a directory of problem files.")
    return sorted(p for p in directory.iterdir()
                  if p.suffix in (".yaml", ".yml", ".json") and not p.name.startswith("_"))


def load_problems(directory: str | Path) -> list[Problem]:
    """Load every problem file of a directory; duplicate ids are an error."""
    problems = [load_problem(p) for p in problem_files(directory)]
    seen: dict[str, str] = {}
    for p in problems:
        if p.id in seen:
            raise ProblemError(f"{p.source}: field 'id': '{p.id}' is also used by {seen[p.id]}.")
        seen[p.id] = p.source
    return problems


def builtin_problem_dir() -> Path:
    """The directory of the problems this package ships."""
    return Path(__file__).resolve().parent / "problems"
