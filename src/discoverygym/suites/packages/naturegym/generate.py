"""`discoverygym package generate FAMILY --count N --out DIR`: packages drawn from the
project's own simulators, each instance its own keyed draw.

Every number of a package comes from `Key.derive(<family>, <package index>, <instance>,
<attempt>)`, so the key's holder can regenerate a release byte for byte and nobody else
can rebuild its truths. An instance is redrawn (next attempt) unless it discriminates
and has headroom (`accept`). Files are written with fixed formatting, sorted JSON and no
timestamps, so the package digests in the release manifest are reproducible.

Package ids are opaque (a keyed digest), and `problem/` names no seed, key or hidden
value; `gate_findings` checks both, beside `package check`'s rules."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ....core.keys import Key
from ..scoring import instance_g
from .families import Family, get_family
from .families.base import REFERENCE_ROLES, Draw
from .families.evaluators import evaluator_source

GENERATOR = "naturegym-generate/1"
#: Redraw rule: the baseline must lose clearly and the bound must beat the SOTA.
BASELINE_G_MAX = -0.5
BOUND_G_MIN = 0.2
MAX_ATTEMPTS = 40
DEV_INSTANCE = "case_dev"


class GenerationError(ValueError):
    """Generation could not finish (one line, for the user)."""


def public_key(seed: int) -> Key:
    """The key of public (development) mode: derived from the seed alone, so anyone can
    regenerate these packages. Never use it for an evaluation."""
    return Key(hashlib.sha256(f"discoverygym-naturegym-public-seed\0{int(seed)}".encode())
               .digest())


def package_id(key: Key, family: str, index: int) -> str:
    """An opaque id: a keyed digest that names neither the family nor the index."""
    return "ng-" + format(key.derive(GENERATOR, "package-id", family, index), "032x")[:20]


def instance_names(family: Family) -> list[str]:
    return [DEV_INSTANCE] + [f"case_{k + 1}" for k in range(family.evaluation_instances)]


def reference_gs(draw: Draw, direction: str) -> dict[str, float]:
    """g of each reference against the instance's SOTA."""
    sota = draw.scores["sota"]
    return {role: instance_g(draw.scores[role], sota, direction) for role in REFERENCE_ROLES}


def accept(draw: Draw, direction: str) -> bool:
    """Keep an instance only if the baseline's g <= -0.5 (the instance tells a simple
    method from the state of the art) and the bound's g >= 0.2 (the SOTA is at least a
    fifth above what a perfect forecast scores, so there is room to surpass it)."""
    if not all(np.isfinite(v) for v in draw.scores.values()) or draw.scores["sota"] <= 0:
        return False
    g = reference_gs(draw, direction)
    return g["baseline"] <= BASELINE_G_MAX and g["bound"] >= BOUND_G_MIN


@dataclass
class Accepted:
    name: str
    draw: Draw
    attempts: int


def draw_instance(family: Family, key: Key, index: int, name: str) -> Accepted:
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng(key.derive(GENERATOR, family.name, index, name, attempt))
        try:
            draw = family.draw(rng)
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):
            continue  # a draw the simulator or a reference cannot handle: redraw
        if accept(draw, family.metric.direction):
            return Accepted(name, draw, attempt + 1)
    raise GenerationError(f"{family.name}: no acceptable draw for package {index} "
                          f"instance {name} in {MAX_ATTEMPTS} attempts")


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _number(value: float) -> str:
    return f"{value:.6g}"


def _versions() -> dict[str, str]:
    import scipy

    from .... import __version__

    return {"discoverygym": __version__, "numpy": np.__version__, "scipy": scipy.__version__}


def package_files(family: Family, accepted: list[Accepted], *, pid: str, index: int,
                  mode: str, key: Key, seed: int | None) -> dict[str, bytes]:
    """Every file of one package, by path (deterministic bytes)."""
    files: dict[str, bytes] = {}
    direction = family.metric.direction
    entries = []
    refs = family.references
    for acc in accepted:
        for name, content in acc.draw.data.items():
            files[f"problem/data/{acc.name}/{name}"] = content
        for name, content in acc.draw.truth.items():
            files[f"evaluation/ground_truth/{acc.name}/{name}"] = content
        scores = acc.draw.scores
        g = reference_gs(acc.draw, direction)
        entries.append({
            "dataset_name": acc.name,
            "split": "development" if acc.name == DEV_INSTANCE else "evaluation",
            "metrics": [{
                "name": family.metric.name, "is_primary": True,
                "metric_direction": direction, "unit": family.metric.unit,
                "source_description": family.metric.description,
                "sota_score": [{
                    "value": _number(scores["sota"]), "method": refs["sota"].method,
                    "notes": f"noise floor {_number(acc.draw.floor)}",
                    "provenance": {
                        "label": "a frozen reimplementation of a published method, run on "
                                 "this instance at generation",
                        "method": refs["sota"].detail,
                        "code_version": refs["sota"].code_version,
                        "run_by": f"discoverygym package generate ({GENERATOR})",
                        "command": "discoverygym package verify-release DIR --key-file K"}}],
                "baseline_score": {"value": _number(scores["baseline"]),
                                   "method": refs["baseline"].method},
                "bound_score": {"value": _number(scores["bound"]),
                                "method": refs["bound"].method,
                                "notes": "privileged: " + refs["bound"].detail},
                "reference_g": {role: round(v, 6) + 0.0 for role, v in g.items()},
            }],
        })
    metadata = {
        "task_name": family.task_name,
        "workflow_topology": "strict_single_step",
        "methodology_paradigm": "physical_modelling",
        "tooling_metadata": {"languages": ["python"], "libraries": list(family.libraries)},
        "domain_metadata": {"primary_domain": "physics", "sub_domain": family.sub_domain,
                            "domain_tags": list(family.tags)},
        "compute_resource_requirements": {"cpu": 1, "gpu": 0, "runtime": "1h"},
        "performance_entries": entries,
        "naturegym": {"generator": GENERATOR, "family": family.name,
                      "family_version": family.version, "package_index": index,
                      "mode": mode, "key_commitment": key.commitment,
                      **({"seed": seed} if mode == "public" else {}),
                      "redraw_rule": {"baseline_g_max": BASELINE_G_MAX,
                                      "bound_g_min": BOUND_G_MIN},
                      "attempts": {a.name: a.attempts for a in accepted},
                      "software": _versions()},
    }
    files["metadata.json"] = _json(metadata)
    evaluations = ", ".join(a.name for a in accepted if a.name != DEV_INSTANCE)
    files["problem/README.md"] = family.readme.encode()
    files["problem/data_description.md"] = (
        family.data_description.replace("{dev}", DEV_INSTANCE)
        + f"\nThe result is computed on {evaluations}.\n").encode()
    files["evaluation/evaluator.py"] = evaluator_source(family.evaluator_kind,
                                                        family.evaluator_config).encode()
    files["evaluation/hidden.json"] = _json({
        "package_id": pid, "family": family.name,
        "instances": {a.name: {"hidden": a.draw.hidden, "floor": a.draw.floor,
                               "references": a.draw.scores} for a in accepted}})
    files["environment/requirements.txt"] = ("\n".join(family.libraries) + "\n").encode()
    files["licenses/LICENSE.md"] = (b"Data generated by the discoverygym project with its "
                                    b"own simulators (MIT license). No third-party data.\n")
    return files


def files_digest(files: dict[str, bytes]) -> str:
    """SHA-256 over the sorted (path, SHA-256 of content) pairs of a package."""
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return h.hexdigest()


def hidden_strings(accepted: list[Accepted], key: Key, seed: int | None) -> list[str]:
    """Texts that must never appear under problem/: every hidden value (as the
    generator's formats would print it), the key's id and commitment, the seed."""
    out = [key.commitment, key.id, key.commitment[:16]]
    for acc in accepted:
        for value in acc.draw.hidden.values():
            v = float(value)
            if v.is_integer() and abs(v) < 10_000:
                continue  # small integers (signs, counts) are not specific
            out += [repr(v), f"{v:.6g}", f"{v:.9e}", f"{v:.6e}"]
    if seed is not None and not (0 <= seed < 10_000):
        out.append(str(seed))
    return out


def gate_findings(files: dict[str, bytes], forbidden: list[str]) -> list[str]:
    """The generation gate over problem/: no forbidden text in any file."""
    findings = []
    for path, content in sorted(files.items()):
        if not path.startswith("problem/"):
            continue
        text = content.decode("utf-8", errors="replace")
        for word in forbidden:
            if word and re.search(r"(?<![\w.])" + re.escape(word) + r"(?![\w])", text):
                findings.append(f"{path}: names a hidden value or key ({word[:12]}...)")
    return findings


def write_files(root: Path, files: dict[str, bytes]) -> None:
    for path, content in sorted(files.items()):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


@dataclass
class GeneratedPackage:
    id: str
    index: int
    digest: str
    files: dict[str, bytes]
    record: dict[str, Any]


def build_package(family: Family, key: Key, index: int, *, mode: str,
                  seed: int | None) -> GeneratedPackage:
    """Draw and assemble one package in memory (no checks run yet)."""
    pid = package_id(key, family.name, index)
    accepted = [draw_instance(family, key, index, name) for name in instance_names(family)]
    files = package_files(family, accepted, pid=pid, index=index, mode=mode, key=key,
                          seed=seed)
    findings = gate_findings(files, hidden_strings(accepted, key, seed))
    if findings:
        raise GenerationError(f"{family.name} package {index}: " + findings[0])
    return GeneratedPackage(pid, index, files_digest(files), files,
                            naturegym_record(family, accepted, pid=pid, index=index))


MANIFEST = "release.json"
MANIFEST_SCHEMA = "naturegym-release/1"


def manifest(family: Family, key: Key, packages: list[GeneratedPackage], *, mode: str,
             seed: int | None, start: int) -> dict[str, Any]:
    """What a release publishes: the key's commitment and every package's digest."""
    return {"schema": MANIFEST_SCHEMA, "generator": GENERATOR, "family": family.name,
            "family_version": family.version, "mode": mode,
            **({"seed": seed} if mode == "public" else {}),
            "key_commitment": key.commitment, "start": start, "count": len(packages),
            "software": _versions(),
            "packages": [{"id": p.id, "index": p.index, "digest": p.digest}
                         for p in packages]}


def generate(family_name: str, count: int, out_dir: Path, key: Key, *, mode: str = "keyed",
             seed: int | None = None, start: int = 0, check: bool = True,
             progress: Any = None) -> dict[str, Any]:
    """Generate `count` packages of a family into `out_dir` (new or empty) and write the
    release manifest there; returns the manifest. With `check`, every package must pass
    `package check` (static and dynamic) or generation stops."""
    family = get_family(family_name)
    if count < 1 or count > 10_000:
        raise GenerationError("--count must be between 1 and 10000")
    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise GenerationError(f"{out_dir} exists and is not an empty folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    packages = []
    for index in range(start, start + count):
        package = build_package(family, key, index, mode=mode, seed=seed)
        root = out_dir / package.id
        write_files(root, package.files)
        if check:
            findings = _check(root, package.record)
            if findings:
                shutil.rmtree(root)
                raise GenerationError(f"{family.name} package {index} fails package check: "
                                      f"{findings[0]}")
        packages.append(package)
        if progress is not None:
            progress(package)
    data = manifest(family, key, packages, mode=mode, seed=seed, start=start)
    (out_dir / MANIFEST).write_bytes(_json(data))
    return data


def _check(root: Path, record: dict[str, Any]) -> list[str]:
    """The gates of a built package: `package check` (static and dynamic, with the
    split) and the record-derived firewall of `package build`."""
    from ..check import check_package
    from .firewall import record_firewall_findings
    from .record import as_record

    findings = [str(f) for f in check_package(root, dynamic=True, require_split=True)]
    return findings + [str(f) for f in record_firewall_findings(as_record(record), root)]


def naturegym_record(family: Family, accepted: list[Accepted], *, pid: str,
                     index: int) -> dict[str, Any]:
    """The package as a NatureGym record (naturegym-record/1), for the record-derived
    firewall: the withheld method is the SOTA, and every hidden generator value is
    declared (small integers such as an orbit's sense left out: they are not specific,
    and every text holds one)."""
    refs = family.references
    sota = refs["sota"]
    return {
        "schema": "naturegym-record/1", "id": pid, "title": family.task_name,
        "domain": {"primary_domain": "physics", "sub_domain": family.sub_domain,
                   "domain_tags": list(family.tags)},
        "package": {},
        "A": {"name": sota.method, "aliases": [], "identifiers": list(family.sota_identifiers),
              "outputs": []},
        "D": {"instances": [{"name": a.name, "split": "development" if a.name == DEV_INSTANCE
                             else "evaluation"} for a in accepted],
              "prepare": "discoverygym.suites.packages.naturegym.generate:build_package",
              "prepare_args": {"family": family.name, "index": index},
              "hidden": {a.name: {k: float(v) for k, v in a.draw.hidden.items()
                                  if not (float(v).is_integer() and abs(v) < 10_000)}
                         or {"none": 1.0} for a in accepted}},
        "M": {"name": family.metric.name, "function": family.evaluator_kind,
              "unit": family.metric.unit, "source_description": family.metric.description,
              "direction": family.metric.direction,
              "output": {"file": family.output_file}},
        "S": {a.name: {"value": _number(a.draw.scores["sota"]), "method": sota.method,
                       "provenance": {"method": sota.detail, "run_by": GENERATOR,
                                      "date": "at generation",
                                      "command": "discoverygym package generate"}}
              for a in accepted},
        "B": {a.name: {"value": _number(a.draw.scores["baseline"]),
                       "method": refs["baseline"].method} for a in accepted},
        "prose": {part: "" for part in ("heading", "problem", "objective", "dataset",
                                        "metrics", "output_format", "submission",
                                        "data_description")},
        "source": {"title": sota.detail},
    }
