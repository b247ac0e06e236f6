"""Generated packages go through the gates of `package build` (issue #24, item 4's last
sentence): each package is a NatureGym record built by `build` (intake, filter,
acquire, split, assemble, calibrate, review, seal), a failed gate redraws the instances
it names with the gate's reason, a leak that keeps failing is never emitted, and the
evaluators come from the one metrics registry.

The attacks are played as a family that leaks would play them: through the draw, into
the files an agent receives under problem/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.naturegym import generate as gen
from discoverygym.naturegym import metrics
from discoverygym.naturegym.build import read_gate
from discoverygym.naturegym.families import FAMILIES, get_family
from discoverygym.naturegym.format.check import check_package
from discoverygym.naturegym.stages import STAGES, file_digests, verify_seal

FAST = "gravity-force-law"
runner = CliRunner()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """One public gravity package generated with its build stages kept."""
    base = tmp_path_factory.mktemp("gates")
    key = gen.public_key(11)
    data = gen.generate(FAST, 1, base / "out", key, mode="public", seed=11,
                        work_dir=base / "work")
    pid = data["packages"][0]["id"]
    return base, key, pid


def test_a_generated_package_passes_every_gate_and_is_the_sealed_build(generated):
    base, _, pid = generated
    stages = base / "work" / pid / "build"
    for stage in STAGES:
        gate = read_gate(stages / stage.name)
        assert gate is not None and gate["passed"], (stage.name, gate)
        assert gate["findings"] == []
    # what is released is the sealed package, byte for byte, and its manifest holds
    sealed = stages / "seal"
    assert verify_seal(sealed) == []
    assert file_digests(sealed / pid) == file_digests(base / "out" / pid)
    # the copied-development agent and the trivial agents were played at calibrate
    calibration = json.loads((stages / "calibrate" / "calibration.json").read_text())
    assert calibration["copied_development"] <= -0.5 and calibration["constant"] <= -0.5
    assert "waived" not in calibration
    assert all(g >= 0.9 for g in calibration["truth_as_output"].values())
    # and the released folder passes `package check --require-split` on its own
    assert [f for f in check_package(base / "out" / pid, require_split=True)
            if f.severity == "error"] == []


def test_the_record_declares_every_hidden_generator_value(generated):
    base, _, pid = generated
    record = json.loads((base / "work" / pid / "record.json").read_text())
    hidden = json.loads((base / "out" / pid / "evaluation/hidden.json").read_text())
    for name, instance in hidden["instances"].items():
        declared = record["D"]["hidden"][name]
        for key, value in instance["hidden"].items():
            if not (float(value).is_integer() and abs(value) < 10_000):
                assert declared[key] == value, key
    assert record["D"]["prepare"] == gen.PREPARE
    assert all(f["path"].startswith("drawn/") for f in record["D"]["files"])


def test_a_rerun_in_the_same_work_folder_skips_every_stage(generated):
    base, key, pid = generated
    again = gen.build_package(get_family(FAST), key, 0, mode="public", seed=11,
                              work_dir=base / "work")
    assert again.id == pid and again.stages_ran == []
    assert again.files == {rel: (base / "out" / pid / rel).read_bytes()
                           for rel in file_digests(base / "out" / pid)}


def test_verify_release_still_regenerates_byte_for_byte(generated):
    base, _, _ = generated
    result = runner.invoke(app, ["package", "verify-release", str(base / "out")])
    assert result.exit_code == 0, result.output
    assert "byte for byte" in result.output


def _leak_into_data(draw, name: str = "alpha") -> None:
    """A hidden generator parameter planted on the agent's side, as a JSON field."""
    info = json.loads(draw.data["info.json"])
    info[name] = round(draw.hidden[name], 4)
    draw.data["info.json"] = (json.dumps(info) + "\n").encode()


def test_a_planted_leak_is_caught_by_the_gate_and_never_emitted(monkeypatch, tmp_path):
    family_type = type(get_family(FAST))
    real_draw = family_type.draw

    def leaky(self, rng):
        draw = real_draw(self, rng)
        _leak_into_data(draw)
        return draw

    monkeypatch.setattr(family_type, "draw", leaky)
    monkeypatch.setattr(gen, "MAX_GATE_REDRAWS", 1)
    out = tmp_path / "out"
    result = runner.invoke(app, ["package", "generate", FAST, "--count", "1", "--out",
                                 str(out), "--seed", "5"])
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert text.startswith("error:") and "Traceback" not in result.output
    assert "assemble gate failed 2 times" in text and "record-firewall" in text
    assert "alpha" in text
    assert list(out.iterdir()) == []  # no package, no manifest


def test_a_draw_that_fails_a_gate_is_redrawn_with_the_reason(monkeypatch, tmp_path):
    """The first draw of case_1 leaks; the assemble gate refuses it, case_1 alone is
    redrawn from its next attempt, and the reason is printed and kept."""
    real = gen.draw_instance
    planted = []

    def first_case_1_leaks(family, key, index, name, first_attempt=0):
        accepted = real(family, key, index, name, first_attempt)
        if name == "case_1" and first_attempt == 0:
            _leak_into_data(accepted.draw)
            planted.append(accepted.attempts)
        return accepted

    monkeypatch.setattr(gen, "draw_instance", first_case_1_leaks)
    out = tmp_path / "out"
    result = runner.invoke(app, ["package", "generate", FAST, "--count", "1", "--out",
                                 str(out), "--seed", "5"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "redrawn case_1 after the assemble gate: [record-firewall]" in text
    pid = json.loads((out / "release.json").read_text())["packages"][0]["id"]
    meta = json.loads((out / pid / "metadata.json").read_text())["naturegym"]
    assert meta["gate_redraws"] == [{
        "stage": "assemble", "instances": ["case_1"],
        "reason": meta["gate_redraws"][0]["reason"]}]
    assert "alpha" in meta["gate_redraws"][0]["reason"]
    assert meta["attempts"]["case_1"] > planted[0]  # a later draw, not the refused one
    info = json.loads((out / pid / "problem/data/case_1/info.json").read_text())
    assert "alpha" not in info
    # the other instances keep their first acceptable draw
    family = get_family(FAST)
    key = gen.public_key(5)
    dev = real(family, key, 0, "case_dev")
    assert meta["attempts"]["case_dev"] == dev.attempts
    assert (out / pid / "problem/data/case_dev/observations.csv").read_bytes() == \
        dev.draw.data["observations.csv"]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_generated_evaluators_come_from_the_metrics_registry(name):
    family = get_family(name)
    m = family.record_metric()
    assert m["function"] in metrics.METRICS
    metrics.metric_for(m)  # the family's M fits its registry entry
    assert "Generated by NatureGym" in metrics.evaluator_source(m)


def test_there_is_one_metrics_registry():
    here = Path(gen.__file__).parent
    assert not (here / "families" / "evaluators.py").exists()


@pytest.mark.parametrize("content, fragment", [
    (b"time_days,x_au\n", "header"),
    (b"time_days,x_au,y_au\n1,2,nan\n", "non-finite"),
    (b"time_days,x_au,y_au\n1,2,3\n", "expected 2 rows"),
    (b"time_days,x_au,y_au\n1,2,3\n2,2,3\n", "is not the query"),
    (b"time_days,x_au,y_au\n" + b"1,1,1\n" * 1_000_000, "larger than"),
])
def test_the_forecast_evaluator_refuses_hostile_outputs(tmp_path, content, fragment):
    """The registry's forecast CSV evaluator, run as a package runs it."""
    from discoverygym.naturegym.format.evaluator_runner import run_evaluator
    from discoverygym.naturegym.format.package import load_package

    family = get_family(FAST)
    root = tmp_path / "pkg"
    (root / "evaluation/ground_truth/case_1").mkdir(parents=True)
    (root / "evaluation/ground_truth/case_1/forecast.csv").write_bytes(
        b"time_days,x_au,y_au\n10,0.5,0.25\n20,0.5,0.5\n")
    (root / "evaluation/evaluator.py").write_text(
        metrics.evaluator_source(family.record_metric()))
    (root / "problem").mkdir()
    (root / "metadata.json").write_text(json.dumps({
        "task_name": "t", "performance_entries": [{"dataset_name": "case_1", "metrics": [{
            "name": "rms_error_au", "is_primary": True,
            "metric_direction": "lower_is_better",
            "sota_score": [{"value": "0.1"}]}]}]}))
    outputs = tmp_path / "outputs"
    (outputs / "case_1").mkdir(parents=True)
    (outputs / "case_1/forecast.csv").write_bytes(content)
    result = run_evaluator(load_package(root), outputs)
    assert result.ok, result.error
    assert result.raw["case_1"]["rms_error_au"] is None
    assert fragment in result.raw["case_1"]["error"]
    (outputs / "case_1/forecast.csv").write_bytes(
        b"time_days,x_au,y_au\n10,0.5,0.25\n20,0.5,0.5\n")
    assert run_evaluator(load_package(root), outputs).raw["case_1"]["rms_error_au"] == 0.0


def test_a_busy_or_unusable_work_folder_is_a_one_line_error(tmp_path):
    import fcntl

    pid = gen.package_id(gen.public_key(3), FAST, 0)
    build_dir = tmp_path / "work" / pid / "build"
    build_dir.mkdir(parents=True)
    with (build_dir / ".lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = runner.invoke(app, ["package", "generate", FAST, "--out",
                                     str(tmp_path / "out"), "--seed", "3", "--work",
                                     str(tmp_path / "work")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "another build" in " ".join(result.output.split())
    (tmp_path / "file").write_text("x")
    result = runner.invoke(app, ["package", "generate", FAST, "--out",
                                 str(tmp_path / "out2"), "--seed", "3", "--work",
                                 str(tmp_path / "file")])
    assert result.exit_code == 1 and result.output.startswith("error:")
