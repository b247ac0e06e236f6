"""NatureBench's own packages run here unchanged: two packages written to their
published guide (tests/data/naturebench_packages: different metrics, directions and
SOTA forms, a null SOTA, ground truth not named like the outputs, one without
licenses/) pass `package check` with warnings, see the workspace their run.py template
expects, get their solve time, and are scored by their rules under the named
protocol."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from discoverygym.core import get_suite
from discoverygym.naturegym.format.check import check_package, errors
from discoverygym.naturegym.format.package import load_package
from testpaths import TESTS

PACKAGES = TESTS / "data" / "naturebench_packages"
CLASSIFY, FLUX = "nbtest-cell-classify", "nbtest-flux-regression"


def correct_outputs(case: str, root: Path = PACKAGES) -> dict[str, str]:
    """What a perfect run.py writes: {path under OUTPUT_DIR: text}."""
    gt = root / case / "evaluation" / "ground_truth"
    if case == CLASSIFY:
        return {f"{d.name}/predictions.csv": (d / "test_labels.csv").read_text()
                for d in sorted(gt.iterdir())}
    return {f"{d.name}/flux.json": (d / "reference_flux.json").read_text()
            for d in sorted(gt.iterdir())}


def episode(case: str, **options):
    return get_suite("packages").episode(case, packages=str(PACKAGES), **options)


# ---- package check ------------------------------------------------------------------
@pytest.mark.parametrize("case", [CLASSIFY, FLUX])
def test_published_packages_pass_check_with_warnings(case):
    findings = check_package(PACKAGES / case)
    assert findings and errors(findings) == []
    assert all(f.severity == "warning" for f in findings)
    text = "\n".join(map(str, findings))
    assert "warning" in text
    if case == CLASSIFY:
        assert "unreported_cohort: SOTA is null" in text
        assert "skipped, as NatureBench skips it" in text
        assert "'top-1 acc 0.99' is not read by NatureBench's rules" in text
    else:
        assert "no licenses/ folder" in text and "'.40' is not read" in text


def test_check_cli_exits_0_on_warnings_and_1_on_errors(tmp_path):
    from typer.testing import CliRunner

    from discoverygym.cli import app

    result = CliRunner().invoke(app, ["package", "check", str(PACKAGES), "--static-only"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "FAIL" not in result.output
    # the gaps stay errors where they are real: every instance's SOTA null
    broken = tmp_path / FLUX
    shutil.copytree(PACKAGES / FLUX, broken)
    meta = json.loads((broken / "metadata.json").read_text())
    for entry in meta["performance_entries"]:
        for metric in entry["metrics"]:
            metric["sota_score"] = None
    (broken / "metadata.json").write_text(json.dumps(meta))
    assert [f.rule for f in errors(check_package(broken, dynamic=False))] == ["sota", "sota"]
    result = CliRunner().invoke(app, ["package", "check", str(broken), "--static-only"])
    assert result.exit_code == 1 and "FAIL" in result.output


def test_a_crashing_evaluator_is_still_an_error(tmp_path):
    broken = tmp_path / CLASSIFY
    shutil.copytree(PACKAGES / CLASSIFY, broken)
    (broken / "evaluation/evaluator.py").write_text("def run_evaluation():\n    1/0\n")
    assert any("crashes" in f.message for f in errors(check_package(broken)))


def test_sota_values_and_runtime_as_naturebench_reads_them():
    a, b = load_package(PACKAGES / CLASSIFY), load_package(PACKAGES / FLUX)
    assert {i.name: i.sota for i in a.instances} == {
        "pbmc_small": 0.95, "lung_atlas": 0.9, "unreported_cohort": None}
    assert {i.name: i.sota for i in b.instances} == {"site_a": 0.55, "site_b": 0.45}
    # runtime {severity, quantity_text}: their reference solve time, not one hour
    assert a.runtime_s == b.runtime_s == 14_400.0
    assert episode(FLUX).budget_left() == 14_400.0


# ---- the workspace --------------------------------------------------------------------
def test_their_run_py_template_works_in_the_workspace(tmp_path):
    """Under their protocol, run.py as their README template writes it reads
    DATA_DIR/<instance>; our own layout (DATA_DIR/data/<instance>) keeps working."""
    plain = episode(FLUX)  # discoverygym's protocol: its layout exactly as before
    assert not (Path(plain.view().workspace()["DATA_DIR"]) / "site_a").exists()
    plain.record()
    ep = episode(FLUX, protocol="naturebench")
    ws = ep.view().workspace()
    data = Path(ws["DATA_DIR"])
    assert (data / "site_a" / "query.csv").read_bytes() == \
        (data / "data" / "site_a" / "query.csv").read_bytes()
    run_py = tmp_path / "run.py"
    run_py.write_text(
        "import json, os\n"
        "DATA_DIR = os.environ['DATA_DIR']\nOUTPUT_DIR = os.environ['OUTPUT_DIR']\n"
        "for instance in ['site_a', 'site_b']:\n"
        "    rows = open(os.path.join(DATA_DIR, instance, 'query.csv')).read().split()[1:]\n"
        "    os.makedirs(os.path.join(OUTPUT_DIR, instance), exist_ok=True)\n"
        "    json.dump([2 * float(x) + 1 for x in rows],\n"
        "              open(os.path.join(OUTPUT_DIR, instance, 'flux.json'), 'w'))\n")
    subprocess.run([sys.executable, str(run_py)], check=True, timeout=60,
                   env={**os.environ, "DATA_DIR": ws["DATA_DIR"],
                        "OUTPUT_DIR": ws["OUTPUT_DIR"]})
    result = ep.view().call("evaluate", {})
    assert not result.is_error and set(result.data["g"]) == {"site_a", "site_b"}
    assert all(g > -1.0 for g in result.data["g"].values())
    ep.record()


# ---- the scoring protocols ----------------------------------------------------------------
def write_all(view, files: dict[str, str]) -> None:
    for path, content in files.items():
        assert not view.call("write_file", {"path": path, "content": content}).is_error


@pytest.mark.parametrize("protocol, completed, value", [
    (None, True, pytest.approx((1 / 0.95 + 1 / 0.9) / 2 - 1)),  # the outputs left count
    ("naturebench", False, -1.0),                           # no evaluation, no score
])
def test_outputs_never_evaluated(protocol, completed, value):
    ep = episode(CLASSIFY, **({"protocol": protocol} if protocol else {}))
    write_all(ep.view(), correct_outputs(CLASSIFY))
    ep.view().call("submit", {})
    record = ep.record()
    assert record.details["completed"] is completed and record.value == value
    assert record.protocol == protocol
    assert record.details["attempts"] == (1 if protocol is None else 0)


@pytest.mark.parametrize("protocol, completed", [(None, False), ("naturebench", True)])
def test_all_malformed_evaluation(protocol, completed):
    ep = episode(FLUX, **({"protocol": protocol} if protocol else {}))
    write_all(ep.view(), {"site_a/flux.json": "not json", "site_b/flux.json": "[1]"})
    assert ep.view().call("evaluate", {}).data["score"] == -1.0
    ep.view().call("submit", {})
    record = ep.record()
    assert record.value == -1.0 and record.details["completed"] is completed
    summary = get_suite("packages").summarize([json.loads(record.to_json())])
    assert summary["completion_rate"] == (1.0 if completed else 0.0)


def test_unknown_protocol_is_refused():
    from discoverygym.core import UnknownName

    with pytest.raises(ValueError):
        episode(FLUX, protocol="nope")
    with pytest.raises(UnknownName):
        get_suite("packages").episodes(packages=str(PACKAGES), protocol="nope")


def test_naturebench_prompt_says_the_rule():
    assert "no score" in episode(FLUX, protocol="naturebench").view().prompt
    assert "no score" not in episode(FLUX).view().prompt


def test_attempt_history_is_kept_in_the_record():
    ep = episode(FLUX, protocol="naturebench")
    view = ep.view()
    write_all(view, {"site_a/flux.json": "oops", "site_b/flux.json": "oops"})
    view.call("evaluate", {})
    write_all(view, correct_outputs(FLUX))
    view.call("evaluate", {})
    view.call("submit", {})
    history = ep.record().details["attempt_history"]
    assert [h["attempt"] for h in history] == [1, 2]
    assert history[0]["aggregate_g"] == -1.0 and history[1]["aggregate_g"] > 0
