"""NatureGym `package generate` and `package verify-release` (issue #24, items 4-5).

Generation is played through the CLI an operator uses; the attacks (a wrong key, a
tampered or added file, a link in the release, a leak of a hidden value into problem/)
are played against the same commands and functions, and each must fail in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core.keys import new_key, write_key_file
from discoverygym.naturegym import generate as gen
from discoverygym.naturegym.families import FAMILIES, get_family
from discoverygym.naturegym.release import ReleaseMismatch, verify_release

runner = CliRunner()
FAST = "gravity-force-law"


def _invoke(*args: str):
    return runner.invoke(app, ["package", *args])


def _one_line_error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert text.startswith("error:"), result.output
    return text


@pytest.fixture(scope="module")
def keyed_release(tmp_path_factory):
    base = tmp_path_factory.mktemp("release")
    key_file = base / "key"
    write_key_file(key_file, new_key())
    out = base / "packages"
    result = _invoke("generate", FAST, "--count", "2", "--out", str(out),
                     "--key-file", str(key_file))
    assert result.exit_code == 0, result.output
    return out, key_file


def test_list_prints_each_family_with_domain_task_type_and_extra():
    result = _invoke("generate", "--list")
    assert result.exit_code == 0
    lines = result.output.split("\n")[:-1]
    assert lines[0].split("\t") == ["family", "domain", "task type", "extra", "installed"]
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert list(rows) == list(FAMILIES)
    assert {"gravity-force-law", "gravity-drag", "rv-activity-forecast",
            "fluid-forecast"} <= set(FAMILIES)
    for name, row in rows.items():
        family = get_family(name)
        assert row[1:] == [family.domain, family.task_type, family.extra or "-", "yes"]


def test_a_family_whose_extra_is_missing_refuses_in_one_line(monkeypatch, tmp_path):
    family_type = type(get_family(FAST))
    monkeypatch.setattr(family_type, "libraries", ("numpy", "no_such_module_xyz"))
    monkeypatch.setattr(family_type, "extra", "chem")
    listing = _invoke("generate", "--list").output
    assert f"{FAST}\tphysical modeling\tforecasting\tchem\tno" in listing
    text = _one_line_error(_invoke("generate", FAST, "--out", str(tmp_path / "o"),
                                   "--seed", "1"))
    assert "no_such_module_xyz" in text and "discoverygym[chem]" in text
    assert not (tmp_path / "o").exists()


def test_keyed_release_verifies_and_publishes_commitment_and_digests(keyed_release):
    out, key_file = keyed_release
    manifest = json.loads((out / "release.json").read_text())
    assert manifest["mode"] == "keyed" and "seed" not in manifest
    assert len(manifest["packages"]) == 2
    assert {p["id"] for p in manifest["packages"]} == {p.name for p in out.iterdir()
                                                        if p.is_dir()}
    result = _invoke("verify-release", str(out), "--key-file", str(key_file))
    assert result.exit_code == 0, result.output
    assert "byte for byte" in result.output


def test_wrong_key_fails_in_one_line(keyed_release, tmp_path):
    out, _ = keyed_release
    wrong = tmp_path / "wrong"
    write_key_file(wrong, new_key())
    text = _one_line_error(_invoke("verify-release", str(out), "--key-file", str(wrong)))
    assert "commitment" in text
    # and a keyed release is never verified without its key
    assert "key" in _one_line_error(_invoke("verify-release", str(out)))


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    return dst


def test_tampered_added_or_linked_file_fails_in_one_line(keyed_release, tmp_path):
    out, key_file = keyed_release
    pid = json.loads((out / "release.json").read_text())["packages"][0]["id"]

    tampered = _copy(out, tmp_path / "tampered")
    truth = next((tampered / pid / "evaluation/ground_truth").rglob("forecast.csv"))
    truth.write_text(truth.read_text().replace("e", "E", 1))
    text = _one_line_error(_invoke("verify-release", str(tampered), "--key-file",
                                   str(key_file)))
    assert "differs" in text and "forecast.csv" in text

    added = _copy(out, tmp_path / "added")
    (added / pid / "problem/hint.txt").write_text("the answer")
    assert "not generated" in _one_line_error(
        _invoke("verify-release", str(added), "--key-file", str(key_file)))

    linked = _copy(out, tmp_path / "linked")
    (linked / pid / "problem/README.md").unlink()
    (linked / pid / "problem/README.md").symlink_to("/etc/hostname")
    assert "link" in _one_line_error(
        _invoke("verify-release", str(linked), "--key-file", str(key_file)))


def test_hostile_manifest_fails_in_one_line(tmp_path):
    (tmp_path / "release.json").write_text("[" * 100_000)
    assert "manifest" in _one_line_error(_invoke("verify-release", str(tmp_path)))
    (tmp_path / "release.json").write_text(json.dumps({"schema": "naturegym-release/1",
                                                       "packages": [{"id": 1}]}))
    assert "malformed" in _one_line_error(_invoke("verify-release", str(tmp_path)))


def test_public_seed_mode_is_marked_public_and_reproducible(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        result = _invoke("generate", FAST, "--count", "1", "--out", str(out), "--seed", "7")
        assert result.exit_code == 0, result.output
    ma, mb = (json.loads((d / "release.json").read_text()) for d in (a, b))
    assert ma == mb and ma["mode"] == "public" and ma["seed"] == 7
    pid = ma["packages"][0]["id"]
    meta = json.loads((a / pid / "metadata.json").read_text())
    assert meta["naturegym"]["mode"] == "public" and meta["naturegym"]["seed"] == 7
    assert _invoke("verify-release", str(a)).exit_code == 0
    # the seed is a development convenience: a keyed release of the same family differs
    assert gen.package_id(gen.public_key(7), FAST, 0) == pid
    assert gen.package_id(new_key(), FAST, 0) != pid


def test_generate_refuses_bad_input_in_one_line(tmp_path):
    assert "unknown family" in _one_line_error(
        _invoke("generate", "no-such", "--out", str(tmp_path / "x"), "--seed", "0"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    assert "empty" in _one_line_error(
        _invoke("generate", FAST, "--out", str(tmp_path / "full"), "--seed", "0"))
    assert "no key" in _one_line_error(
        runner.invoke(app, ["package", "generate", FAST, "--out", str(tmp_path / "y")],
                      env={"DISCOVERYGYM_KEY": "", "DISCOVERYGYM_KEY_FILE": ""}))


def test_ids_are_opaque_and_problem_names_no_seed_key_or_hidden_value(keyed_release):
    out, _ = keyed_release
    manifest = json.loads((out / "release.json").read_text())
    for entry in manifest["packages"]:
        root = out / entry["id"]
        assert re.fullmatch(r"ng-[0-9a-f]{20}", entry["id"])
        hidden = json.loads((root / "evaluation/hidden.json").read_text())
        problem_text = "\n".join(p.read_text() for p in (root / "problem").rglob("*")
                                 if p.is_file())
        assert manifest["key_commitment"][:16] not in problem_text
        assert "seed" not in problem_text.lower()
        numbers = {float(x) for x in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", problem_text)}
        for instance in hidden["instances"].values():
            for name, value in instance["hidden"].items():
                if float(value).is_integer():
                    continue
                assert not any(abs(n - value) <= 1e-6 * abs(value) for n in numbers), name


def test_the_gate_stops_a_family_that_leaks_a_hidden_value(monkeypatch):
    monkeypatch.setattr(gen, "MAX_GATE_REDRAWS", 1)
    family = get_family(FAST)
    real_draw = type(family).draw

    def leaky(self, rng):
        draw = real_draw(self, rng)
        draw.data["notes.txt"] = f"alpha = {draw.hidden['alpha']!r}\n".encode()
        return draw

    monkeypatch.setattr(type(family), "draw", leaky)
    with pytest.raises(gen.GenerationError, match="hidden value"):
        gen.build_package(family, new_key(), 0, mode="keyed", seed=None)


def _draw(baseline: float, sota: float, bound: float) -> dict[str, float]:
    return {"baseline": baseline, "sota": sota, "bound": bound}


def test_redraw_rule():
    lower = "lower_is_better"
    assert gen.accept(_draw(1.6, 1.0, 0.75), lower)
    assert not gen.accept(_draw(1.4, 1.0, 0.8), lower)  # baseline g = -0.4
    assert not gen.accept(_draw(2.0, 1.0, 0.85), lower)  # bound g = 0.15
    assert not gen.accept(_draw(2.0, 0.0, 0.0), lower)  # SOTA 0: g undefined
    assert not gen.accept(_draw(float("nan"), 1.0, 0.5), lower)


def test_every_instance_records_three_references_that_meet_the_rule(keyed_release):
    out, _ = keyed_release
    for root in (p for p in out.iterdir() if p.is_dir()):
        meta = json.loads((root / "metadata.json").read_text())
        assert {e["split"] for e in meta["performance_entries"]} == {"development",
                                                                     "evaluation"}
        for entry in meta["performance_entries"]:
            metric = entry["metrics"][0]
            sota = metric["sota_score"][0]
            assert sota["provenance"]["code_version"]
            assert metric["baseline_score"]["value"] and metric["bound_score"]["value"]
            g = metric["reference_g"]
            assert g["baseline"] <= gen.BASELINE_G_MAX and g["bound"] >= gen.BOUND_G_MIN


def test_recorded_baseline_is_what_the_shipped_evaluator_gives_the_baseline(
        keyed_release, tmp_path):
    from discoverygym.naturegym.format.evaluator_runner import run_evaluator
    from discoverygym.naturegym.format.package import load_package

    out, _ = keyed_release
    family = get_family(FAST)
    root = next(p for p in out.iterdir() if p.is_dir())
    meta = json.loads((root / "metadata.json").read_text())
    for entry in meta["performance_entries"]:
        name = entry["dataset_name"]
        (tmp_path / name).mkdir()
        (tmp_path / name / "forecast.csv").write_bytes(
            family.baseline_outputs(root / "problem/data" / name)["forecast.csv"])
    result = run_evaluator(load_package(root), tmp_path)
    assert result.ok, result.error
    for entry in meta["performance_entries"]:
        measured = result.raw[entry["dataset_name"]]["rms_error_au"]
        recorded = float(entry["metrics"][0]["baseline_score"]["value"])
        assert measured == pytest.approx(recorded, rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["fluid-forecast", "gravity-drag"])
def test_other_families_generate_and_regenerate_byte_for_byte(family, tmp_path):
    key = new_key()
    data = gen.generate(family, 1, tmp_path / "out", key)
    assert verify_release(tmp_path / "out", key)["count"] == 1
    meta = json.loads((tmp_path / "out" / data["packages"][0]["id"] / "metadata.json")
                      .read_text())
    assert np.isfinite(float(meta["performance_entries"][0]["metrics"][0]["sota_score"][0]
                             ["value"]))
    with pytest.raises(ReleaseMismatch):
        verify_release(tmp_path / "out", new_key())


def test_an_agent_in_a_generated_package_reaches_no_hidden_file(keyed_release):
    """The attack through the agent's own tools: list everything it can see, try the
    hidden files by relative and absolute path, and look for any hidden value."""
    from discoverygym.suites.packages.suite import PackagesSuite

    out, _ = keyed_release
    pid = json.loads((out / "release.json").read_text())["packages"][0]["id"]
    episode = PackagesSuite().episode(pid, packages=str(out))
    listing = episode.call("list_files", {"path": "data:"}).text
    assert "hidden" not in listing and "ground_truth" not in listing
    assert "metadata" not in listing
    for path in ("data:../evaluation/hidden.json", "data:../metadata.json",
                 f"data:{out / pid / 'evaluation/hidden.json'}",
                 "data:../../release.json"):
        result = episode.call("read_file", {"path": path})
        assert result.is_error, path
    assert pid not in json.dumps(episode.workspace(), default=str)


def test_generation_goes_through_the_record_firewall_of_package_build(monkeypatch,
                                                                        tmp_path):
    """A leak the text gate does not see (a hidden value, rounded, in a data column
    named after it) is stopped by `package build`'s record-derived firewall, and the
    package is not emitted."""
    family_type = type(get_family(FAST))
    real_draw = family_type.draw

    def leaky(self, rng):
        draw = real_draw(self, rng)
        draw.data["extra.csv"] = f"time_days,alpha\n0,{draw.hidden['alpha']:.4f}\n".encode()
        return draw

    monkeypatch.setattr(family_type, "draw", leaky)
    monkeypatch.setattr(gen, "MAX_GATE_REDRAWS", 1)
    key = new_key()
    accepted = [gen.draw_instance(family_type(), key, 0, name)
                for name in gen.instance_names(family_type())]
    record, _ = gen.package_record(family_type(), accepted, pid="ng-x", index=0,
                                   mode="keyed", key=key, seed=None)
    assert record["D"]["hidden"]["case_1"]["alpha"]  # declared to the firewall
    with pytest.raises(gen.GenerationError, match="record-firewall.*alpha"):
        gen.generate(FAST, 1, tmp_path / "out", key)
    assert list((tmp_path / "out").iterdir()) == []
