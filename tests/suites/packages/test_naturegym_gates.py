"""The bound, zero and no-science gates of NatureGym (issue #34), each shown catching a
planted flaw through the same door an agent's outputs go through (the sealed package's
evaluator, in its own process), and the public flag of a release made with --seed:
`run packages` says so in its summary and records, and `leaderboard` shows it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.naturegym import gates
from discoverygym.naturegym import generate as gen
from discoverygym.naturegym.families import get_family

FAST = "gravity-force-law"
runner = CliRunner()


def _generate(out: Path, seed: int = 21) -> list[gen.GeneratedPackage]:
    generated: list[gen.GeneratedPackage] = []
    gen.generate(FAST, 1, out, gen.public_key(seed), mode="public", seed=seed,
                 progress=generated.append)
    return generated


@pytest.fixture(scope="module")
def public_release(tmp_path_factory):
    out = tmp_path_factory.mktemp("gates") / "packages"
    return out, _generate(out)


def _zero_inputs(out: Path, generated: list[gen.GeneratedPackage]):
    return [(out / p.id, {a.name: a.draw.outputs["sota"] for a in p.accepted})
            for p in generated]


# ---- bound gate ------------------------------------------------------------------------
def test_the_bound_gate_judges_the_oracle_on_every_draw_tried():
    good = [{"baseline": 2.0, "sota": 1.0, "bound": 0.5}] * 9 + \
        [{"baseline": 2.0, "sota": 1.0, "bound": 0.9}]
    assert gates.bound_gate(good, "lower_is_better").passed
    # rv-activity-forecast version 2: an oracle that knows the planet, the kernel and
    # the noise beats the SOTA by g = 0.01-0.1 only (a "bound" nobody can approach)
    unreachable = [{"baseline": 2.0, "sota": 1.0, "bound": 1.0 - g}
                   for g in (0.014, 0.05, 0.096, 0.03, 0.5)]
    result = gates.bound_gate(unreachable, "lower_is_better")
    assert not result.passed and result.figure == "20% of 5"
    assert "oracle reaches g >= 0.2 on 20% of 5 draws" in result.findings[0]
    assert not gates.bound_gate([], "lower_is_better").passed


def test_the_oracle_of_each_fixed_family_has_headroom():
    """The oracle's outputs, played through the family's evaluator (in process)."""
    for name in ("gravity-force-law", "gravity-drag"):
        family = get_family(name)
        tried = [gen.draw_scores(family, family.draw(np.random.default_rng(k)))
                 for k in range(3)]
        assert gates.bound_gate(tried, family.metric.direction).passed, (name, tried)


def test_every_try_is_kept_for_the_bound_gate(public_release):
    _, generated = public_release
    for accepted in generated[0].accepted:
        assert len(accepted.tried) == accepted.attempts  # first_attempt 0: one per try
        assert accepted.tried[-1] == accepted.scores


# ---- zero gate -------------------------------------------------------------------------
def test_the_sotas_own_outputs_score_g_0_exactly(public_release):
    out, generated = public_release
    result = gates.zero_gate(_zero_inputs(out, generated))
    assert result.passed, result.findings
    assert result.figure == f"{len(generated[0].accepted)} of {len(generated[0].accepted)}"
    meta = json.loads((out / generated[0].id / "metadata.json").read_text())
    for entry in meta["performance_entries"]:
        value = entry["metrics"][0]["sota_score"][0]["value"]
        accepted = next(a for a in generated[0].accepted if a.name == entry["dataset_name"])
        assert float(value) == accepted.scores["sota"]  # full precision, read back exactly


@pytest.mark.slow
def test_the_zero_gate_catches_a_rounded_sota(monkeypatch, tmp_path):
    """The SOTA recorded with 6 significant digits (as before issue #34) moves the zero."""
    monkeypatch.setattr(gen, "_exact", gen._number)
    out = tmp_path / "packages"
    generated = _generate(out, seed=22)
    result = gates.zero_gate(_zero_inputs(out, generated))
    assert not result.passed
    assert "the SOTA's own outputs score g = " in result.findings[0]


# ---- no-science gate -------------------------------------------------------------------
def test_no_science_predictors_stay_below_the_sota(public_release):
    out, generated = public_release
    family = get_family(FAST)
    roots = [out / p.id for p in generated]
    predictors = gates.no_science_outputs(family, roots[0])
    assert set(predictors) == {"constant", "training-mean", "persistence",
                               gates.COPY_DEVELOPMENT}
    result = gates.no_science_gate(family, roots)
    assert result.passed, result.findings
    assert result.figure.startswith("100%")
    assert all(g < 0 for g in result.details["best_g"].values())


def test_the_no_science_gate_catches_a_shortcut(public_release, monkeypatch):
    """A family whose format lets a no-science predictor copy the answer (here the
    'persistence' of a task whose held-out values are its last observations)."""
    out, generated = public_release
    family = get_family(FAST)
    root = out / generated[0].id
    real = type(family).no_science_outputs

    def shortcut(self, data_dir):
        answers = real(self, data_dir)
        truth = root / "evaluation" / "ground_truth" / data_dir.name
        answers["persistence"] = {"forecast.csv": (truth / "forecast.csv").read_bytes()}
        return answers

    monkeypatch.setattr(type(family), "no_science_outputs", shortcut)
    result = gates.no_science_gate(family, [root])
    assert not result.passed
    assert result.figure.startswith("0% (persistence)")
    assert "persistence stays at g < 0 on only 0% of instances" in result.findings[0]


def test_copy_development_copies_the_development_truth(public_release):
    out, generated = public_release
    root = out / generated[0].id
    copied = gates.no_science_outputs(get_family(FAST), root)[gates.COPY_DEVELOPMENT]
    dev = (root / "evaluation/ground_truth/case_dev/forecast.csv").read_bytes()
    assert copied and all(files == {"forecast.csv": dev} for files in copied.values())
    assert "case_dev" not in copied


# ---- the calibration table -------------------------------------------------------------
def test_the_table_shows_every_gate_and_escapes_findings():
    from discoverygym.naturegym.calibration import markdown, passes

    figures = {"packages": 1, "valid": 1, "truth_g_ge_0": 1, "trivial_g_le_-0.5": 1,
               "baseline_g_le_-0.5": 1, "bound_g_gt_0.1": 1, "median_baseline_g": -3.0,
               "median_bound_g": 0.5, "generation_s": 10.0, "generation_cpu_s": 9.0,
               "domain": "physical modeling",
               "gates": {g: {"passed": True, "figure": "ok", "findings": []}
                         for g in gates.GATES}}
    assert passes(figures)
    text = markdown({"fam": figures}, "cmd")
    assert "| leak gate | bound gate | zero gate | no-science gate |" in text
    assert "pass: ok" in text and "| yes |" in text
    figures["gates"]["leak"] = {"passed": False, "figure": "R2 0.99",
                                "findings": ["a | b <script>"]}
    assert not passes(figures)
    text = markdown({"fam": figures}, "cmd")
    assert "FAIL: R2 0.99" in text and "| NO |" in text
    assert "a \\| b \\<script\\>" in text and "<script>" not in text


# ---- public releases -------------------------------------------------------------------
def test_a_public_release_says_so_in_its_manifest_and_metadata(public_release):
    out, generated = public_release
    assert json.loads((out / "release.json").read_text())["public"] is True
    meta = json.loads((out / generated[0].id / "metadata.json").read_text())
    assert meta["naturegym"]["public"] is True
    from discoverygym.naturegym.format.package import load_package

    assert load_package(out / generated[0].id).public


@pytest.mark.slow
def test_run_packages_on_a_public_release_says_it_and_the_leaderboard_shows_it(
        public_release, tmp_path):
    out, _ = public_release
    run = tmp_path / "run"
    result = runner.invoke(app, ["run", "packages", "--agent", "baseline", "--workers", "1",
                                 "--executor", "serial", "--out", str(run),
                                 "--packages", str(out)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "public: 1 of these records played public packages" in text
    record = json.loads((run / "records.jsonl").read_text().splitlines()[0])
    assert record["details"]["public"] is True
    summary = json.loads((run / "summary.json").read_text())
    assert "public_records" in json.dumps(summary)
    board = runner.invoke(app, ["leaderboard", str(run)], env={"COLUMNS": "200"})
    assert board.exit_code == 0, board.output
    assert "public" in board.output and "no held-out evaluation" in " ".join(
        board.output.split())
    rows = json.loads(runner.invoke(app, ["leaderboard", str(run), "--format", "json"]).output)
    assert rows[0]["n_public"] == 1
