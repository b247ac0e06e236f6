"""NatureGym `package build`: the record, every stage's gate, resume and atomicity, the
record-derived firewall (each rule against a planted leak), the optional review with a
scripted model, and the shipped packages rebuilt from their records."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from discoverygym.naturegym import RecordError, build, load_record
from discoverygym.naturegym.firewall import record_firewall_findings
from discoverygym.naturegym.format.check import check_package
from discoverygym.naturegym.record import as_record, validate
from discoverygym.naturegym.stages import STAGES, file_digests, verify_seal
from discoverygym.suites.packages.shipped import CATALOG
from discoverygym.suites.packages.validity import inspect_grader
from testpaths import TESTS

RECORDS = CATALOG.parent / "records"
SHIPPED = sorted(p.stem for p in RECORDS.glob("*.json"))
ALL_STAGES = [s.name for s in STAGES]
PROV = {"label": "our strongest method, run once and frozen", "method": "weighted mean",
        "run_by": "tests", "date": "2026-11-26", "command": "pytest"}
SOURCE_TEXT = ("In this study we measured the mean of a population by drawing many noisy "
               "samples from each of several reservoirs and averaging them with weights "
               "given by the inverse variance of each reservoir across the season.")


def toy_record(**changes) -> dict:
    """A small complete record: noisy samples around a hidden mean per instance."""
    mus = {"toy_1": 0.37, "toy_2": 0.52, "toy_dev": 0.44}
    record = {
        "schema": "naturegym-record/1", "id": "toy-mean", "title": "Estimate a hidden mean",
        "domain": {"primary_domain": "statistics", "sub_domain": "estimation",
                   "domain_tags": ["toy"]},
        "package": {"workflow_topology": "strict_single_step",
                    "methodology_paradigm": "parameter_inference",
                    "tooling_metadata": {"languages": ["python"]},
                    "compute_resource_requirements": {"cpu": 1, "gpu": 0, "runtime": "10 min"},
                    "requirements": ["numpy"], "license": "Test data (MIT).\n"},
        "A": {"name": "inverse-variance weighting", "aliases": ["Gauss-Markov estimate"],
              "identifiers": ["estimate_mu"], "outputs": ["mu_estimate.txt"]},
        "D": {"instances": [{"name": "toy_1", "split": "evaluation"},
                            {"name": "toy_2", "split": "evaluation"},
                            {"name": "toy_dev", "split": "development"}],
              "prepare": "naturegym_toy:samples",
              "prepare_args": {"seed": 7, "instances": {k: {"mu": v} for k, v in mus.items()}},
              "hidden": {k: {"mu": v} for k, v in mus.items()}},
        "M": {"name": "absolute_error", "function": "json_absolute_error",
              "direction": "lower_is_better", "output": {"file": "answer.json", "key": "mu"},
              "unit": "", "source_description": "|mu_submitted - mu_true|"},
        "S": {k: {"value": "0.001", "method": "weighted mean", "provenance": PROV} for k in mus},
        "B": {k: {"value": "0.01", "method": "median"} for k in mus},
        "prose": {"heading": "A hidden mean",
                  "problem": "Each folder holds noisy draws around an unknown centre.",
                  "objective": "For each instance, estimate the centre.",
                  "dataset": "`data/<instance>/samples.csv`: one column `x`.",
                  "metrics": "Absolute error of the centre (lower is better).",
                  "output_format": "Write `<OUTPUT_DIR>/<instance>/answer.json` holding "
                                   '`{"mu": <number>}`.',
                  "submission": "One file per instance; a missing one fails.",
                  "data_description": "# Data\n\n`samples.csv`: draws, one per line.\n"},
        "source": {"title": "A survey of reservoir means", "text": SOURCE_TEXT},
    }
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = record
        for key in parents:
            node = node[key]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return record


DELETE = object()


@pytest.fixture(autouse=True)
def _toy_module(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One passed build of the toy record, copied by the tests that change it."""
    sys.path.insert(0, str(TESTS))
    try:
        work = tmp_path_factory.mktemp("toy") / "work"
        result = build(toy_record(), work)
    finally:
        sys.path.remove(str(TESTS))
    assert result.passed, [s for s in result.stages if s.findings]
    return work


def _copy(built_work: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(built_work, work, symlinks=True)
    return work


def _failed(result) -> tuple[str, str]:
    stage = next(s for s in result.stages if not s.passed)
    return stage.name, " | ".join(f"{f['path']}: {f['message']}" for f in stage.findings)


# ---- the record --------------------------------------------------------------------------
@pytest.mark.parametrize("change, field", [
    ({"schema": "naturegym-record/0"}, "schema"),
    ({"id": "../escape"}, "id"),
    ({"D.instances": [{"name": "a", "split": "training"}]}, "split"),
    ({"D.hidden": {"toy_1": {"mu": 0.37}}}, "D.hidden.toy_2"),
    ({"D.hidden.toy_1": {"mu": "0.37"}}, "finite number"),
    ({"D.prepare": "os.system('x')"}, "module:function"),
    ({"D.files": [{"path": "../../etc/passwd", "sha256": "0" * 64}]}, "relative"),
    ({"M.direction": "sideways"}, "M.direction"),
    ({"S.toy_2": DELETE}, "S.toy_2"),
    ({"S.toy_1.provenance": {"method": "x"}}, "provenance.run_by"),
    ({"B.nobody": {"value": "1", "method": "x"}}, "not an instance"),
    ({"prose.objective": DELETE}, "prose.objective"),
])
def test_record_validation_names_the_field(change, field):
    with pytest.raises(RecordError, match=field.replace(".", r"\.")):
        validate(toy_record(**change))


def test_hostile_record_files_are_refused(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(RecordError, match="deeper|not valid JSON"):
        load_record(deep)
    huge = tmp_path / "huge.json"
    huge.write_text('{"schema": "' + "x" * (5 * 1024 * 1024) + '"}')
    with pytest.raises(RecordError, match="larger than"):
        load_record(huge)
    with pytest.raises(RecordError, match="cannot read"):
        load_record(tmp_path / "absent.json")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_records_load(name):
    record = load_record(RECORDS / f"{name}.json")
    assert record.id == name and record.split_names("development")


# ---- a passing build, resume and atomicity ------------------------------------------------
def test_a_build_runs_every_gate_and_seals(built, tmp_path):
    for stage in ALL_STAGES:
        gate = json.loads((built / stage / "gate.json").read_text())
        assert gate["passed"] and gate["findings"] == [] and gate["stage"] == stage
    package = built / "seal" / "toy-mean"
    assert check_package(package, require_split=True) == []
    manifest = json.loads((built / "seal" / "MANIFEST.json").read_text())
    assert set(manifest["files"]) == set(file_digests(package))
    assert verify_seal(built / "seal") == []
    tampered = _copy(built, tmp_path)
    (tampered / "seal/toy-mean/problem/README.md").write_text("changed after sealing\n")
    assert verify_seal(tampered / "seal") == ["problem/README.md"]
    # A rerun notices the tampered output and seals again.
    assert build(toy_record(), tampered).ran == ["seal"]
    assert verify_seal(tampered / "seal") == []
    calibration = json.loads((built / "calibrate" / "calibration.json").read_text())
    assert calibration["empty"] == -1.0 and calibration["constant"] <= -0.5
    assert calibration["copied_development"] <= -0.5
    assert set(calibration["truth_as_output"].values()) == {1.0}


def test_a_rerun_skips_every_stage(built, tmp_path):
    work = _copy(built, tmp_path)
    result = build(toy_record(), work)
    assert result.passed and result.ran == []


def test_changing_s_reruns_only_what_depends_on_it(built, tmp_path):
    work = _copy(built, tmp_path)
    record = toy_record(**{"S.toy_1.value": "0.0009"})
    result = build(record, work)
    assert result.passed
    # The data (filter, acquire, split) and what the agent sees (review) stand.
    assert result.ran == ["intake", "assemble", "calibrate", "seal"]
    meta = json.loads((work / "seal" / "toy-mean" / "metadata.json").read_text())
    assert meta["performance_entries"][0]["metrics"][0]["sota_score"][0]["value"] == "0.0009"


def test_a_damaged_stage_output_reruns(built, tmp_path):
    work = _copy(built, tmp_path)
    (work / "split" / "data" / "toy_1" / "samples.csv").write_text("x\n0\n")
    result = build(toy_record(), work)
    assert result.passed and result.ran[0] == "split"


def test_a_build_killed_mid_stage_leaves_no_partial_output(tmp_path):
    """SIGKILL while `prepare` is writing: no split/ folder appears (only a temporary one,
    removed by the next build), and the rerun completes the package."""
    work = tmp_path / "work"
    marker = tmp_path / "started"
    record_path = tmp_path / "record.json"
    record_path.write_text(json.dumps(toy_record(**{
        "D.prepare_args.sleep_s": 60, "D.prepare_args.marker": str(marker)})))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c",
                             "import sys; from discoverygym.naturegym import "
                             "build; build(sys.argv[1], sys.argv[2])",
                             str(record_path), str(work)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), "the build never reached the split stage"
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    child = int(marker.read_text())
    deadline = time.monotonic() + 10  # the prepare process dies with the build
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    assert (work / "acquire" / "gate.json").exists()
    assert not (work / "split").exists()
    assert list(work.glob(".tmp-split-*")), "the killed stage wrote into a temporary folder"
    env["TOY_NO_SLEEP"] = "1"
    done = subprocess.run([sys.executable, "-c",
                           "import sys; from discoverygym.naturegym import "
                           "build; r = build(sys.argv[1], sys.argv[2]); print(r.ran, r.passed)",
                           str(record_path), str(work)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("['split', 'assemble', 'calibrate', 'review', 'seal'] "
                                   "True")
    assert not list(work.glob(".tmp-*")) and not list(work.glob(".old-*"))
    assert not (work / "split" / "data" / "partial.csv").exists()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_prepare_that_never_ends_is_stopped(tmp_path):
    marker = tmp_path / "started"
    start = time.monotonic()
    # 8 s: time enough for the child to start and write its pid on a loaded machine.
    result = build(toy_record(**{"D.prepare_timeout_s": 8, "D.prepare_args.sleep_s": 600,
                                 "D.prepare_args.marker": str(marker)}), tmp_path / "work")
    assert _failed(result) == ("split", "D.prepare: failed: ran past 8 s (D.prepare_timeout_s)")
    assert time.monotonic() - start < 60
    assert not marker.exists() or not _alive(int(marker.read_text()))


# ---- each gate fails what it must -----------------------------------------------------
@pytest.mark.parametrize("change, stage, fragment", [
    ({"S.toy_1.value": "not reported"}, "intake", "no usable number"),
    ({"B.toy_2.value": "0.0001"}, "intake", "not worse than the SOTA"),
    ({"M.function": "json_secret_metric"}, "intake", "not a known metric"),
    ({"D.prepare_args.instances.toy_1.sigma": 0.05}, "intake", "sigma = 0.05 is not declared"),
    ({"prose.problem": "Use inverse-variance weighting."}, "filter", "method name"),
    ({"prose.submission": "TODO"}, "filter", "empty or TODO"),
    ({"prose.output_format": "Write one number per instance."}, "filter", "output file"),
    ({"D.instances": [{"name": "toy_1", "split": "evaluation"},
                      {"name": "toy_2", "split": "evaluation"},
                      {"name": "toy_dev", "split": "evaluation"}]}, "filter",
     "no development instance"),
    ({"D.prepare": "naturegym_toy:absent"}, "filter", "cannot be loaded"),
    ({"D.prepare_args.jitter": True}, "split", "not deterministic"),
    ({"D.prepare_args.leak_truth": True}, "split", "truth on the agent's side"),
    ({"D.prepare_args.truth_offset": 0.5}, "split", "mu = 0.87 is not declared in D.hidden.toy_1"),
    ({"D.prepare_args.copy_data": {"toy_dev": "toy_1"}}, "split",
     "with the development instance"),
    ({"prose.dataset": "Values scatter around 0.37 in the first folder."}, "assemble",
     "hidden values: toy_1.mu = 0.37"),
    ({"D.hidden.toy_1.mu": 0.0, "D.prepare_args.instances.toy_1.mu": 0.0}, "calibrate",
     "constant outputs score"),
])
def test_each_gate_stops_the_build(tmp_path, change, stage, fragment):
    result = build(toy_record(**change), tmp_path / "work")
    assert not result.passed
    failed, message = _failed(result)
    assert (failed, fragment in message) == (stage, True), message
    assert result.package is None and not (tmp_path / "work" / "seal").exists()
    gate = json.loads((tmp_path / "work" / stage / "gate.json").read_text())
    assert gate["passed"] is False and gate["findings"]


def test_a_written_waiver_lets_a_known_weakness_pass_and_keeps_it_visible(tmp_path):
    zero = {"D.hidden.toy_1.mu": 0.0, "D.prepare_args.instances.toy_1.mu": 0.0}
    waiver = {"check": "constant", "instance": "toy_1",
              "reason": "a centre of zero is the point of this instance, kept on purpose"}
    result = build(toy_record(**zero, waivers=[waiver]), tmp_path / "work")
    assert result.passed
    (waived,) = json.loads((tmp_path / "work/calibrate/calibration.json").read_text())["waived"]
    assert waived["check"] == "constant" and waived["instance"] == "toy_1" and waived["g"] == 1.0
    for bad, fragment in ((dict(waiver, check="firewall"), "may be waived"),
                          (dict(waiver, instance="toy_9"), "not an instance"),
                          (dict(waiver, reason="ok"), "say why")):
        with pytest.raises(RecordError, match=fragment):
            validate(toy_record(waivers=[bad]))


def _with_source_file(tmp_path: Path, content: bytes, declared: bytes | None = None) -> dict:
    (tmp_path / "raw").mkdir(exist_ok=True)
    (tmp_path / "raw" / "notes.txt").write_bytes(content)
    digest = hashlib.sha256(declared if declared is not None else content).hexdigest()
    return toy_record(**{"D.files": [{"path": "raw/notes.txt", "sha256": digest}],
                         "D.prepare_args.source_file": "raw/notes.txt"})


def test_acquire_checks_the_checksum_and_hands_the_file_on(tmp_path):
    good = as_record(_with_source_file(tmp_path, b"site log\n"), tmp_path)
    result = build(good, tmp_path / "ok")
    assert result.passed
    assert (result.package / "problem/data/toy_1/source.txt").read_bytes() == b"site log\n"
    bad = as_record(_with_source_file(tmp_path, b"tampered\n", declared=b"site log\n"), tmp_path)
    failed, message = _failed(build(bad, tmp_path / "bad"))
    assert failed == "acquire" and "differs from the declared" in message


def test_acquire_does_not_follow_a_link(tmp_path):
    record = as_record(_with_source_file(tmp_path, b"site log\n"), tmp_path)
    (tmp_path / "secret").write_bytes(b"site log\n")
    (tmp_path / "raw" / "notes.txt").unlink()
    (tmp_path / "raw" / "notes.txt").symlink_to(tmp_path / "secret")
    failed, message = _failed(build(record, tmp_path / "work"))
    assert failed == "acquire" and "cannot be read" in message


def _archive_record(tmp_path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]):
    raw = tmp_path / "raw"
    raw.mkdir(exist_ok=True)
    path = raw / "bundle.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tf.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                tf.addfile(info, io.BytesIO(member[1]))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return as_record(toy_record(**{
        "D.archives": [{"path": "raw/bundle.tar.gz", "sha256": digest}],
        "D.prepare_args.source_file": "raw/bundle/notes.txt"}), tmp_path)


def test_acquire_unpacks_a_checked_archive(tmp_path):
    result = build(_archive_record(tmp_path, [("notes.txt", b"site log\n")]), tmp_path / "w")
    assert result.passed
    assert (result.package / "problem/data/toy_2/source.txt").read_bytes() == b"site log\n"


@pytest.mark.parametrize("member, fragment", [
    (("../outside.txt", b"x"), "refused"),
    ((lambda: _link("notes.txt", "/etc/passwd")), "not a regular file"),
])
def test_acquire_refuses_a_hostile_archive(tmp_path, member, fragment):
    member = member() if callable(member) else member
    failed, message = _failed(build(_archive_record(tmp_path, [member]), tmp_path / "w"))
    assert failed == "acquire" and "cannot be unpacked" in message and fragment in message
    assert not (tmp_path / "outside.txt").exists()


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def test_a_crashing_prepare_is_a_failed_gate(tmp_path):
    result = build(toy_record(**{"D.prepare_args.instances": {"toy_1": {}}}), tmp_path / "w")
    failed, message = _failed(result)
    assert failed in ("intake", "split") and ("KeyError" in message or "declared" in message)


# ---- the record-derived firewall ------------------------------------------------------
@pytest.fixture
def gravity(tmp_path):
    root = tmp_path / "gravity-force-law"
    shutil.copytree(CATALOG / "gravity-force-law", root)
    return load_record(RECORDS / "gravity-force-law.json"), root


def _plant(root: Path, text: str, name: str = "README.md") -> None:
    path = root / "problem" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if path.exists() else "") + "\n" + text + "\n")


@pytest.mark.parametrize("name", SHIPPED)
def test_the_firewall_finds_nothing_in_the_shipped_packages(name):
    assert record_firewall_findings(load_record(RECORDS / f"{name}.json"), CATALOG / name) == []


def test_a_one_digit_truth_is_caught(gravity):
    """The issue's example: `package check` alone misses it; the record's firewall does not."""
    record, root = gravity
    _plant(root, "The exponent alpha of system_1 is 0.03.")
    assert [f for f in check_package(root, dynamic=False) if f.rule == "firewall"] == []
    (finding,) = record_firewall_findings(record, root)
    assert finding.path == "problem/README.md" and "system_1.alpha = 0.03" in finding.message


def test_package_check_takes_the_record(gravity):
    from typer.testing import CliRunner

    from discoverygym.cli import app

    record, root = gravity
    args = ["package", "check", str(root), "--static-only", "--record",
            str(RECORDS / "gravity-force-law.json")]
    assert CliRunner().invoke(app, args).exit_code == 0
    _plant(root, "The exponent alpha of system_1 is 0.03.")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "system_1.alpha = 0.03" in " ".join(result.output.split())
    other = CliRunner().invoke(app, args[:-1] + [str(RECORDS / "rv-holdout-forecast.json")])
    assert other.exit_code == 1 and "not among the packages" in other.output


@pytest.mark.parametrize("text, fragment", [
    ("The heavier star has 10.1 solar masses.", "system_1.m1 = 10.1"),
    ("Its eccentricity is 0.35.", "system_2.e = 0.35"),
    ("Alpha is -4e-2 in the second system.", "system_2.alpha = -0.04"),
])
def test_hidden_generator_parameters_in_prose_are_caught(gravity, text, fragment):
    record, root = gravity
    _plant(root, text, "data_description.md")
    (finding,) = record_firewall_findings(record, root)
    assert fragment in finding.message


def test_hidden_values_in_data_fields_are_caught(gravity):
    record, root = gravity
    (root / "problem/data/system_1/info.json").write_text(json.dumps({"setup": {"e": 0.5}}))
    (root / "problem/data/system_2/extra.csv").write_text("time_s,alpha\n0,1\n")
    found = {f.path: f.message for f in record_firewall_findings(record, root)}
    assert "system_1.e" in found["problem/data/system_1/info.json"]
    assert "column 'alpha'" in found["problem/data/system_2/extra.csv"]


@pytest.mark.parametrize("text, fragment", [
    ("A Full Orbit Fit works best here.", "method name 'full orbit fit'"),
    ("Try orbit determination.", "alias 'orbit determination'"),
    ("Call fit_force_law_orbit(t, pos).", "identifier 'fit_force_law_orbit'"),
])
def test_the_method_names_are_caught(gravity, text, fragment):
    record, root = gravity
    _plant(root, text)
    messages = " ".join(f.message for f in record_firewall_findings(record, root))
    assert fragment in messages


def test_oversized_files_are_not_passed_unread(gravity):
    record, root = gravity
    (root / "problem/notes.md").write_text("x " * 3_000_000)
    header = "time_s,alpha\n" + "0.1,0.2\n" * 800_000
    (root / "problem/data/system_1/big.csv").write_text(header)
    start = time.monotonic()
    found = {f.path: f.message for f in record_firewall_findings(record, root)}
    assert "too long to check" in found["problem/notes.md"]
    assert "column 'alpha'" in found["problem/data/system_1/big.csv"]
    assert time.monotonic() - start < 20


def test_a_run_of_source_words_is_caught(gravity):
    record, root = gravity
    words = record.data["source"]["text"].split()
    _plant(root, "As noted: " + " ".join(words[5:17]))
    (finding,) = record_firewall_findings(record, root)
    assert "runs of 10 words with the source" in finding.message
    _plant(root, " ".join(words[5:13]))  # eight words in a row are allowed
    assert len(record_firewall_findings(record, root)) == 1


def test_the_method_output_files_are_caught(gravity):
    record, root = gravity
    data = copy.deepcopy(record.data)
    data["A"]["outputs"] = ["orbit_fit.json"]
    record = as_record(data, RECORDS)
    (root / "problem/data/system_1/orbit_fit.json").write_text("{}")
    _plant(root, "Compare with orbit_fit.json.")
    found = {(f.path, f.message.split(" (")[0]) for f in record_firewall_findings(record, root)}
    assert ("problem/data/system_1/orbit_fit.json",
            "is an output file of the withheld method") in found
    assert any(p == "problem/README.md" and "output file" in m for p, m in found)


# ---- the review -----------------------------------------------------------------------
def _scripted(*replies):
    """An offline Inspect model that gives these replies (its token usage set, so
    nothing is downloaded to count tokens)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    outputs = []
    for reply in replies:
        out = ModelOutput.from_content(model="mockllm/model", content=reply)
        out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
        outputs.append(out)
    return inspect_grader("mockllm/model", custom_outputs=outputs)


@pytest.mark.parametrize("reply, passed, fragment", [
    ('{"source_named": false, "solvable": true, "reason": "clear"}', True, ""),
    ('{"source_named": true, "solvable": true, "reason": "a known survey"}', False,
     "could name the source"),
    ('{"source_named": false, "solvable": false, "reason": "no data"}', False,
     "not solvable"),
    ('Looks fine! {"source_named": false}', False, "malformed review"),
    ('{"source_named": "no", "solvable": true, "reason": ""}', False, "malformed review"),
])
def test_the_review_with_a_scripted_model(built, tmp_path, reply, passed, fragment):
    work = _copy(built, tmp_path)
    result = build(toy_record(), work, reviewer=_scripted(reply), reviewer_name="mockllm/model")
    assert result.ran == ["review", "seal"][:2 if passed else 1]
    assert result.passed is passed
    if not passed:
        assert _failed(result)[0] == "review" and fragment in _failed(result)[1]
    review = json.loads((work / "review" / "review.json").read_text())
    assert review["reviewer"] == "mockllm/model"


def test_a_review_that_times_out_holds_the_package_back(built, tmp_path):
    from inspect_ai.model import ModelOutput

    async def slow(*_args):
        await asyncio.sleep(30)
        return ModelOutput.from_content(model="mockllm/model", content="{}")

    work = _copy(built, tmp_path)
    result = build(toy_record(), work, reviewer=inspect_grader("mockllm/model",
                                                               custom_outputs=slow),
                   reviewer_name="mockllm/slow", review_timeout_s=0.3)
    assert _failed(result) == ("review", "problem/: the reviewer timed out after 0.3 s")


def test_the_review_never_passes_a_failed_gate(tmp_path):
    asked = []

    async def approving(prompt: str) -> str:
        asked.append(prompt)
        return '{"source_named": false, "solvable": true, "reason": "fine"}'

    result = build(toy_record(**{"prose.dataset": "The first centre is 0.37."}),
                   tmp_path / "work", reviewer=approving)
    assert _failed(result)[0] == "assemble" and asked == []
    assert "review" not in [s.name for s in result.stages]


def test_the_review_prompt_holds_what_the_agent_sees_and_no_truth(built):
    from discoverygym.naturegym.review import review_prompt

    prompt = review_prompt(built / "assemble" / "toy-mean")
    assert "noisy draws around an unknown centre" in prompt and "samples.csv" in prompt
    assert "0.37" not in prompt and "ground_truth" not in prompt


# ---- the CLI ---------------------------------------------------------------------------
def test_the_cli_builds_and_reports_one_line_errors(tmp_path):
    from typer.testing import CliRunner

    from discoverygym.cli import app

    record_path = tmp_path / "record.json"
    record_path.write_text(json.dumps(toy_record(**{"prose.submission": "TODO"})))
    runner = CliRunner()
    env = {"PYTHONPATH": str(TESTS)}
    result = runner.invoke(app, ["package", "build", str(record_path), "--work",
                                 str(tmp_path / "w")], env=env)
    assert result.exit_code == 1 and "stopped at filter" in result.output
    assert "FAIL filter" in result.output and "Traceback" not in result.output
    record_path.write_text("{not json")
    result = runner.invoke(app, ["package", "build", str(record_path), "--work",
                                 str(tmp_path / "w")])
    assert result.exit_code == 1 and result.output.startswith("error:")
    assert "not valid JSON" in " ".join(result.output.split()) and "Traceback" not in result.output


# ---- what a user hands `package build` (issue #38 item 4) -----------------------------
def _build_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`discoverygym package build` in a process of its own, with a deadline: a build
    that waits on its record fails the test instead of hanging it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[3] / "src"), str(TESTS)])}
    return subprocess.run([sys.executable, "-m", "discoverygym", "package", "build", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.mark.slow  # a process each
@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_a_record_path_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, kind):
    """Before: a FIFO as the record hung the build forever (open waited for a writer)."""
    if kind == "fifo":
        record_path = tmp_path / "record.json"
        os.mkfifo(record_path)
        said = "a FIFO, not a regular file"
    elif kind == "folder":
        record_path = tmp_path / "record.json"
        record_path.mkdir()
        said = "a folder, not a regular file"
    else:
        record_path = Path("/dev/zero")
        said = "a device, not a regular file"
    done = _build_cli(str(record_path), "--work", str(tmp_path / "w"), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert text.startswith("error:") and said in text, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())


@pytest.mark.slow  # a process
def test_a_folder_of_the_users_named_like_a_stage_stops_the_build_untouched(built, tmp_path):
    """Before: `--work` holding the user's own `seal/` (or any stage name) lost it: the
    build renamed it to .old-* and removed it, exit 0."""
    work = tmp_path / "work"
    (work / "seal").mkdir(parents=True)
    (work / "seal" / "thesis.tex").write_text("years of work")
    record_path = tmp_path / "record.json"
    record_path.write_text(json.dumps(toy_record()))
    done = _build_cli(str(record_path), "--work", str(work), cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    text = " ".join(done.stdout.split())
    assert text.startswith("error:") and "was not made by package build" in text
    assert (work / "seal" / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in work.iterdir()) == [".lock", "seal"]  # nothing ran
    # the same folder, with the stage's gate copied in from a real build, is still not ours
    shutil.copy(built / "seal" / "gate.json", work / "seal" / "gate.json")
    with pytest.raises(RuntimeError, match="was not made by package build"):
        build(toy_record(), work)
    assert (work / "seal" / "thesis.tex").exists()


def test_the_users_tmp_and_old_folders_survive_and_the_builds_own_leftovers_go(built,
                                                                               tmp_path):
    """Before: every `.tmp-*` and `.old-*` in --work was removed at the start of a build."""
    from discoverygym.naturegym.stages import STAGE_MARKER

    work = _copy(built, tmp_path)
    for name in (".tmp-notes", ".old-photos", ".tmp-split-12345678"):
        (work / name).mkdir()
        (work / name / "mine.txt").write_text("keep")
    (work / ".tmp-scratch.txt").write_text("a file of the user's")
    leftover = work / ".tmp-calibrate-deadbeef"  # what a killed build of ours leaves
    leftover.mkdir()
    (leftover / STAGE_MARKER).write_text('{"stage": "calibrate"}\n')
    (leftover / "half.json").write_text("{")
    result = build(toy_record(), work)
    assert result.passed and result.ran == []
    for name in (".tmp-notes", ".old-photos", ".tmp-split-12345678"):
        assert (work / name / "mine.txt").read_text() == "keep", name
    assert (work / ".tmp-scratch.txt").exists()
    assert not leftover.exists()
    for stage in ALL_STAGES:  # every stage folder the build made carries its marker
        assert (work / stage / STAGE_MARKER).is_file(), stage


def test_a_stage_folder_replaced_by_a_link_is_not_followed_or_removed(built, tmp_path):
    work = _copy(built, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("the user's")
    shutil.rmtree(work / "review")
    (work / "review").symlink_to(elsewhere)
    with pytest.raises(RuntimeError, match="was not made by package build"):
        build(toy_record(), work)
    assert (elsewhere / "data.txt").read_text() == "the user's"


# ---- the shipped packages, rebuilt from their records --------------------------------
#: A rebuilt data file may differ from the shipped one in its last digits where the
#: numerical machine differs (numpy's SIMD kernels, BLAS; README "Tests"): the gravity
#: trajectories in the ninth digit, a relative 1e-8, even on the machine that wrote them.
#: Such files must agree far below their noise (1e-5 of the orbit's size for gravity, 1e-3
#: of the field for the fluid); every other file must be identical.
NUMERIC_REL_TOLERANCE = 1e-7


def _numeric(path: Path):
    import numpy as np

    if path.suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if path.suffix == ".csv":
        return np.loadtxt(path, delimiter=",", skiprows=1)
    return None


def _assert_same_data(built: Path, shipped: Path) -> None:
    import numpy as np

    built_files, shipped_files = file_digests(built), file_digests(shipped)
    assert set(built_files) == set(shipped_files)
    for rel in (k for k in shipped_files if built_files[k] != shipped_files[k]):
        a, b = _numeric(built / rel), _numeric(shipped / rel)
        assert a is not None and b is not None, f"{rel} differs and is not numeric data"
        assert a.shape == b.shape, rel
        scale = np.abs(b).max() or 1.0
        assert np.abs(a - b).max() <= NUMERIC_REL_TOLERANCE * scale, rel


def _assert_rebuilt(name: str, package: Path) -> None:
    _assert_same_data(package, CATALOG / name)


@pytest.mark.parametrize("name", ["rv-holdout-forecast", "sunspot-cycle-forecast",
                                  "mauna-loa-co2-forecast"])
def test_a_shipped_package_is_rebuilt_from_its_record(name, tmp_path):
    result = build(RECORDS / f"{name}.json", tmp_path / "work")
    assert result.passed, _failed(result)
    _assert_rebuilt(name, result.package)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gravity-force-law", "binary-drag-timescale"])
def test_the_gravity_packages_are_rebuilt_from_their_records(name, tmp_path):
    result = build(RECORDS / f"{name}.json", tmp_path / "work")
    assert result.passed, _failed(result)
    _assert_rebuilt(name, result.package)


@pytest.mark.slow
def test_the_fluid_data_is_rebuilt_from_its_record(tmp_path):
    """The fluid build simulates twice at 128^2 (over a minute on 2 cores): here its
    prepare function runs once and its data and truth must equal the catalog's."""
    from discoverygym.naturegym.stages import resolve_prepare

    record = load_record(RECORDS / "fluid-vorticity-forecast.json")
    resolve_prepare(record.data["D"]["prepare"])(tmp_path, tmp_path / "inputs",
                                                 record.data["D"]["prepare_args"])
    shipped = CATALOG / "fluid-vorticity-forecast"
    _assert_same_data(tmp_path / "data", shipped / "problem" / "data")
    _assert_same_data(tmp_path / "ground_truth", shipped / "evaluation" / "ground_truth")


def test_the_shipped_evaluators_and_prose_are_the_generated_ones(tmp_path):
    """README, data description, metadata, evaluator, requirements and licence of every
    shipped package are what `assemble` writes from its record."""
    from discoverygym.naturegym.metrics import evaluator_source
    from discoverygym.naturegym.stages import metadata, readme_text

    for name in SHIPPED:
        record = load_record(RECORDS / f"{name}.json")
        root = CATALOG / name
        data = record.data
        assert (root / "evaluation/evaluator.py").read_text() == evaluator_source(data["M"])
        assert (root / "problem/README.md").read_text() == readme_text(data["prose"])
        assert (root / "problem/data_description.md").read_text() == \
            data["prose"]["data_description"]
        assert json.loads((root / "metadata.json").read_text()) == metadata(record)
        assert (root / "licenses/LICENSE.md").read_text() == data["package"]["license"]


def test_no_shipped_record_waives_a_check():
    for name in SHIPPED:
        assert "waivers" not in load_record(RECORDS / f"{name}.json").data, name


@pytest.mark.parametrize("name", SHIPPED)
def test_copying_the_shipped_development_truth_scores_badly(name, tmp_path):
    """The copied-development agent, played on the shipped package through its own
    evaluator: the development truth written as every evaluation instance's answer
    scores g <= -0.5 on each (the fluid package's old development flow gave +0.33)."""
    from discoverygym.naturegym.format.evaluator_runner import run_evaluator
    from discoverygym.naturegym.format.package import load_package

    record = load_record(RECORDS / f"{name}.json")
    answer = record.data["M"]["output"]["file"]
    truth = CATALOG / name / "evaluation" / "ground_truth"
    dev = (truth / record.split_names("development")[0] / answer).read_bytes()
    for instance in record.split_names("evaluation"):
        (tmp_path / instance).mkdir()
        (tmp_path / instance / answer).write_bytes(dev)
    result = run_evaluator(load_package(CATALOG / name), tmp_path)
    assert result.ok, result.error
    for instance in record.split_names("evaluation"):
        assert result.g[instance] <= -0.5, (instance, result.g[instance])


# ---- sources read from an installed package (D.installed) -----------------------------
def test_the_real_series_are_read_from_the_installed_statsmodels_by_checksum():
    """The two statsmodels packages declare their source inside the installed package,
    with its SHA-256: the file there is the one the record names."""
    import hashlib

    from discoverygym.naturegym.stages import installed_root

    for name in ("sunspot-cycle-forecast", "mauna-loa-co2-forecast"):
        (entry,) = load_record(RECORDS / f"{name}.json").data["D"]["installed"]
        assert entry["module"] == "statsmodels"
        source = installed_root("statsmodels") / entry["path"]
        assert hashlib.sha256(source.read_bytes()).hexdigest() == entry["sha256"]


def test_an_installed_source_with_another_checksum_or_module_fails_its_gate(tmp_path):
    data = json.loads((RECORDS / "sunspot-cycle-forecast.json").read_text())
    data["D"]["installed"][0]["sha256"] = "0" * 64
    (tmp_path / "r.json").write_text(json.dumps(data))
    result = build(tmp_path / "r.json", tmp_path / "work")
    assert not result.passed
    failed = next(s for s in result.stages if not s.passed)
    assert failed.name == "acquire" and "checksum" in failed.findings[0]["message"]

    data["D"]["installed"][0]["module"] = "no_such_package_here"
    (tmp_path / "r.json").write_text(json.dumps(data))
    result = build(tmp_path / "r.json", tmp_path / "work2")
    failed = next(s for s in result.stages if not s.passed)
    assert failed.name == "filter" and "missing" in failed.findings[0]["message"]

    data["D"]["installed"][0]["module"] = "../etc"
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match="module"):
        load_record(tmp_path / "r.json")
