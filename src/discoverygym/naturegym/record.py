"""The NatureGym record: one versioned JSON file per package, T = (A, D, M, S, B).

- A, the withheld method: its name, aliases, code identifiers and the files it writes
  (the firewall keeps all four out of `problem/`).
- D, the data: the instances and their development/evaluation split, local source
  files and archives (.tar.gz, .tgz, .tar, .zip) with their SHA-256, a `prepare` function ("module:function") that writes each
  instance's data and ground truth, its arguments, and every hidden value (ground
  truth and hidden generator parameters) per instance.
- M, the metric: a named function of `metrics.METRICS` (the evaluator is generated from
  it), its direction, the output file and key the agent writes, the unit.
- S, the state of the art per instance: the value string, the method, its provenance.
- B, an optional baseline per instance: a simpler honest method's figure (worse than S).

The rest is what a package needs besides T: the title, domain, README parts (`prose`),
`package` fields of metadata.json, the `source` (title, optional text, for the
firewall's shared-word-run rule), optional `waivers`: a calibration check
(`constant` or `copied_development`) an author accepts for one instance, with the reason
(kept in calibration.json; no other gate can be waived), and optional `extras` that a
generator adds to what the assemble stage writes: `metadata` (top-level fields of
metadata.json), `instance_metrics` (fields of one instance's metric entry, e.g. a
bound's score) and `evaluation_files` (JSON files under evaluation/); none may replace
a field or file the record already fixes.

A complete example (`records/gravity-force-law.json` is a real one)::

    {"schema": "naturegym-record/1", "id": "my-task", "title": "Measure x",
     "domain": {"primary_domain": "physics", "sub_domain": "mechanics",
                "domain_tags": ["inverse problem"]},
     "package": {"workflow_topology": "strict_single_step",
                 "methodology_paradigm": "parameter_inference",
                 "tooling_metadata": {"languages": ["python"]},
                 "compute_resource_requirements": {"cpu": 1, "gpu": 0, "runtime": "30 min"},
                 "requirements": ["numpy"], "license": "MIT, our own data."},
     "A": {"name": "full orbit fit", "aliases": ["orbit determination"],
           "identifiers": ["fit_orbit"], "outputs": ["orbit_fit.json"]},
     "D": {"instances": [{"name": "sys_1", "split": "evaluation"},
                         {"name": "sys_dev", "split": "development"}],
           "files": [{"path": "sources/raw.csv", "sha256": "<64 hex>"}],
           "archives": [{"path": "sources/images.tar.gz", "sha256": "<64 hex>"}],
           "prepare": "mypkg.prepare:build_data", "prepare_args": {"seed": 1},
           "prepare_timeout_s": 600,
           "hidden": {"sys_1": {"x": 0.03}, "sys_dev": {"x": 0.02}}},
     "M": {"name": "absolute_error", "function": "json_absolute_error",
           "direction": "lower_is_better", "output": {"file": "answer.json", "key": "x"},
           "unit": "", "source_description": "|x_submitted - x_true|"},
     "S": {"sys_1": {"value": "3.7e-07", "method": "full orbit fit",
                     "provenance": {"label": "our strongest method, run once and frozen",
                                    "method": "...", "run_by": "...", "date": "2026-11-25",
                                    "command": "...", "software": "numpy 2.4"}},
           "sys_dev": {...}},
     "B": {"sys_1": {"value": "6.3e-04", "method": "log-log slope"}, "sys_dev": {...}},
     "prose": {"heading": "...", "problem": "...", "objective": "...", "dataset": "...",
               "metrics": "...", "output_format": "...", "submission": "...",
               "data_description": "..."},
     "source": {"title": "...", "text": "..."}}

`load_record` reads and validates one (bounded in size and depth, since a record may
come from anyone); every error is a `RecordError` whose message names the field."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "naturegym-record/1"
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
SPLITS = ("development", "evaluation")
DIRECTIONS = ("lower_is_better", "higher_is_better")
PROSE_PARTS = ("heading", "problem", "objective", "dataset", "metrics", "output_format",
               "submission", "data_description")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
#: Calibration checks an author may accept for one instance, with a written reason
#: (a known weakness kept visible); no other gate can be waived.
WAIVABLE = ("constant", "copied_development")
#: What `extras` may add, and the fields and files it may not replace.
EXTRA_PARTS = ("metadata", "instance_metrics", "evaluation_files")
FIXED_METADATA = ("task_name", "workflow_topology", "methodology_paradigm",
                  "tooling_metadata", "domain_metadata", "compute_resource_requirements",
                  "performance_entries")
FIXED_METRIC_FIELDS = ("name", "is_primary", "metric_direction", "source_description",
                       "unit", "sota_score", "baseline_score")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MODULE = re.compile(r"^[A-Za-z_]\w{0,63}$")
_PREPARE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class RecordError(ValueError):
    """A record breaks the format; the message names the field."""


@dataclass(frozen=True)
class Record:
    """A validated record. `data` is the JSON object; `base_dir` is the folder the
    record's relative file paths are read from."""

    data: dict[str, Any]
    base_dir: Path

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def instances(self) -> list[dict[str, str]]:
        return self.data["D"]["instances"]

    def split_names(self, split: str) -> list[str]:
        return [i["name"] for i in self.instances if i["split"] == split]

    def part(self, *names: str) -> dict[str, Any]:
        """The named top-level parts, for a stage's input digest."""
        return {n: self.data.get(n) for n in names}

    def digest(self, *names: str) -> str:
        """SHA-256 of the named parts (all of them when none is named)."""
        chosen = self.data if not names else self.part(*names)
        return canonical_digest(chosen)


def canonical_digest(value: Any) -> str:
    """SHA-256 of a JSON value in canonical form (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _depth(value: Any, limit: int = MAX_DEPTH) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise RecordError(f"nested deeper than {limit} levels")
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]


def _need(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise RecordError(f"{where}.{key}: missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise RecordError(f"{where}.{key}: must be {getattr(kind, '__name__', kind)}")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RecordError(f"{where}: must be a list of non-empty strings")
    return value


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and value == value and abs(value) != float("inf")


def validate(data: Any) -> dict[str, Any]:
    """Check the record's structure; returns it unchanged or raises RecordError."""
    if not isinstance(data, dict):
        raise RecordError("the record must be a JSON object")
    _depth(data)
    if data.get("schema") != SCHEMA:
        raise RecordError(f"schema: must be {SCHEMA!r}, got {str(data.get('schema'))[:40]!r}")
    rid = _need(data, "id", str, "record")
    if not _NAME.match(rid):
        raise RecordError("id: letters, digits, '.', '_' or '-', at most 64 characters")
    _need(data, "title", str, "record")
    _need(data, "domain", dict, "record")
    _need(data, "package", dict, "record")
    method = _need(data, "A", dict, "record")
    _need(method, "name", str, "A")
    for key in ("aliases", "identifiers", "outputs"):
        _strings(method.get(key, []), f"A.{key}")
    d = _need(data, "D", dict, "record")
    instances = _need(d, "instances", list, "D")
    names = []
    for k, inst in enumerate(instances):
        name = _need(inst, "name", str, f"D.instances[{k}]")
        if not _NAME.match(name):
            raise RecordError(f"D.instances[{k}].name: {name[:40]!r} is not a plain name")
        if inst.get("split") not in SPLITS:
            raise RecordError(f"D.instances[{k}].split: must be one of {SPLITS}")
        names.append(name)
    if len(set(names)) != len(names):
        raise RecordError("D.instances: a name is repeated")
    for kind in ("files", "archives", "installed"):
        entries = d.get(kind, [])
        if not isinstance(entries, list):
            raise RecordError(f"D.{kind}: must be a list")
        for k, f in enumerate(entries):
            path = _need(f, "path", str, f"D.{kind}[{k}]")
            if kind == "installed" and not _MODULE.match(str(f.get("module", ""))):
                raise RecordError(f"D.installed[{k}].module: a top-level module name")
            if path.startswith("/") or ".." in Path(path).parts:
                raise RecordError(f"D.{kind}[{k}].path: must be relative, without '..'")
            if kind == "archives" and not path.endswith(ARCHIVE_SUFFIXES):
                raise RecordError(f"D.archives[{k}].path: must end in one of "
                                  f"{', '.join(ARCHIVE_SUFFIXES)}")
            if not _SHA256.match(str(f.get("sha256", ""))):
                raise RecordError(f"D.{kind}[{k}].sha256: 64 lower-case hex digits")
    prepare = _need(d, "prepare", str, "D")
    if not _PREPARE.match(prepare):
        raise RecordError("D.prepare: must be 'module:function'")
    _need(d, "prepare_args", dict, "D")
    timeout = d.get("prepare_timeout_s", 3600)
    if not _finite_number(timeout) or not 0 < timeout <= 86_400:
        raise RecordError("D.prepare_timeout_s: seconds, more than 0 and at most 86400")
    hidden = _need(d, "hidden", dict, "D")
    for name in names:
        values = hidden.get(name)
        if not isinstance(values, dict) or not values:
            raise RecordError(f"D.hidden.{name}: every instance declares its hidden values")
        for key, value in values.items():
            if not _finite_number(value):
                raise RecordError(f"D.hidden.{name}.{key}: must be a finite number")
    m = _need(data, "M", dict, "record")
    for key in ("name", "function", "unit", "source_description"):
        _need(m, key, str, "M")
    if m.get("direction") not in DIRECTIONS:
        raise RecordError(f"M.direction: must be one of {DIRECTIONS}")
    output = _need(m, "output", dict, "M")
    _need(output, "file", str, "M.output")
    sota = _need(data, "S", dict, "record")
    for name in names:
        entry = sota.get(name)
        if not isinstance(entry, dict):
            raise RecordError(f"S.{name}: missing (a SOTA for every instance)")
        _need(entry, "value", str, f"S.{name}")
        _need(entry, "method", str, f"S.{name}")
        prov = _need(entry, "provenance", dict, f"S.{name}")
        for key in ("method", "run_by", "date", "command"):
            _need(prov, key, str, f"S.{name}.provenance")
    baseline = data.get("B")
    if baseline is not None:
        if not isinstance(baseline, dict):
            raise RecordError("B: must be an object or null")
        for name, entry in baseline.items():
            if name not in names:
                raise RecordError(f"B.{name}: not an instance")
            _need(entry, "value", str, f"B.{name}")
            _need(entry, "method", str, f"B.{name}")
    waivers = data.get("waivers", [])
    if not isinstance(waivers, list):
        raise RecordError("waivers: must be a list")
    for k, waiver in enumerate(waivers):
        if _need(waiver, "check", str, f"waivers[{k}]") not in WAIVABLE:
            raise RecordError(f"waivers[{k}].check: only {', '.join(WAIVABLE)} may be waived")
        if _need(waiver, "instance", str, f"waivers[{k}]") not in names:
            raise RecordError(f"waivers[{k}].instance: not an instance")
        if len(_need(waiver, "reason", str, f"waivers[{k}]").strip()) < 20:
            raise RecordError(f"waivers[{k}].reason: say why, in a sentence")
    _validate_extras(data.get("extras", {}), names)
    prose = _need(data, "prose", dict, "record")
    for part in PROSE_PARTS:
        _need(prose, part, str, "prose")
    source = _need(data, "source", dict, "record")
    _need(source, "title", str, "source")
    if not isinstance(source.get("text", ""), str):
        raise RecordError("source.text: must be a string")
    return data


def _validate_extras(extras: Any, names: list[str]) -> None:
    if not isinstance(extras, dict) or set(extras) - set(EXTRA_PARTS):
        raise RecordError(f"extras: an object with at most {', '.join(EXTRA_PARTS)}")
    metadata = extras.get("metadata", {})
    if not isinstance(metadata, dict) or set(metadata) & set(FIXED_METADATA):
        raise RecordError("extras.metadata: an object that replaces no field the record "
                          "fixes (" + ", ".join(FIXED_METADATA) + ")")
    per_instance = extras.get("instance_metrics", {})
    if not isinstance(per_instance, dict):
        raise RecordError("extras.instance_metrics: an object keyed by instance")
    for name, fields in per_instance.items():
        if name not in names:
            raise RecordError(f"extras.instance_metrics.{str(name)[:40]}: not an instance")
        if not isinstance(fields, dict) or set(fields) & set(FIXED_METRIC_FIELDS):
            raise RecordError(f"extras.instance_metrics.{name}: an object that replaces no "
                              "field the record fixes")
    files = extras.get("evaluation_files", {})
    if not isinstance(files, dict):
        raise RecordError("extras.evaluation_files: an object of file name -> JSON value")
    for name in files:
        if not _NAME.match(name) or not name.endswith(".json"):
            raise RecordError(f"extras.evaluation_files.{str(name)[:40]}: a plain .json "
                              "file name")


def load_record(path: str | Path) -> Record:
    """Read and validate a record file (at most 4 MiB, 32 levels deep). Anything but a
    regular file (a FIFO, a device, a folder) is refused in one line, before a byte is
    read: opened without blocking, the open file itself is what is checked."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecordError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        raise RecordError(f"{path}: {kind}, not a regular file; a record is a JSON file")
    with os.fdopen(fd, "rb") as fh:
        try:
            raw = fh.read(MAX_RECORD_BYTES + 1)
        except OSError as exc:
            raise RecordError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(raw) > MAX_RECORD_BYTES:
        raise RecordError(f"{path}: larger than {MAX_RECORD_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RecordError(f"{path}: not valid JSON ({str(exc)[:120]})") from exc
    return Record(validate(data), path.resolve().parent)


def as_record(record: str | Path | Record | dict[str, Any], base_dir: Path | None = None
              ) -> Record:
    """A Record from a path, a Record, or a JSON object (relative paths then resolve
    against `base_dir`, default the current directory)."""
    if isinstance(record, Record):
        return record
    if isinstance(record, dict):
        return Record(validate(json.loads(json.dumps(record))), (base_dir or Path.cwd()).resolve())
    return load_record(record)
