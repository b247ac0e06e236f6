"""`package check` passes the shipped packages, fails broken copies naming the rule,
and a package written by hand to the published format loads, checks and runs."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from discoverygym.core import get_suite
from discoverygym.naturegym.format.check import check_package
from discoverygym.run import read_records, run_episodes
from discoverygym.suites.packages.scaffold import scaffold
from discoverygym.suites.packages.shipped import CATALOG

SHIPPED = sorted(p for p in CATALOG.iterdir() if (p / "metadata.json").exists())


@pytest.mark.parametrize("root", SHIPPED, ids=lambda p: p.name)
def test_shipped_packages_pass(root):
    assert check_package(root, require_split=True) == []


@pytest.fixture()
def broken(tmp_path):
    def make(mutate):
        dst = tmp_path / "pkg"
        shutil.copytree(SHIPPED[0], dst)
        mutate(dst)
        return [f.rule for f in check_package(dst)], check_package(dst)
    return make


def test_ground_truth_leaked_into_problem(broken):
    def leak(root: Path):
        truth = next((root / "evaluation/ground_truth").rglob("answer.json")).read_text()
        value = next(iter(json.loads(truth).values()))
        (root / "problem/notes.md").write_text(f"the answer is {value!r:.12}\n")
    rules, findings = broken(leak)
    assert "firewall" in rules and any("ground-truth" in f.message for f in findings)


def test_paper_title_in_readme(broken):
    def title(root: Path):
        meta = json.loads((root / "metadata.json").read_text())
        meta["paper_title"] = "A Remarkable Study of Binary Stars"
        (root / "metadata.json").write_text(json.dumps(meta))
        readme = root / "problem/README.md"
        readme.write_text(readme.read_text() + "\nSee A Remarkable Study of Binary Stars.\n")
    rules, findings = broken(title)
    assert "firewall" in rules and any("paper title" in f.message for f in findings)


def test_evaluator_crashing(broken):
    def crash(root: Path):
        (root / "evaluation/evaluator.py").write_text("def run_evaluation():\n    1/0\n")
    rules, findings = broken(crash)
    assert rules.count("evaluator") >= 3
    assert any("ZeroDivisionError" in f.message for f in findings)


def test_metadata_missing_sota(broken):
    """One instance without a SOTA is skipped, as NatureBench skips it: a warning, the
    other instances are scored (all of them without one is an error, see
    test_packages_naturebench.py)."""
    def drop(root: Path):
        meta = json.loads((root / "metadata.json").read_text())
        del meta["performance_entries"][0]["metrics"][0]["sota_score"]
        (root / "metadata.json").write_text(json.dumps(meta))
    rules, findings = broken(drop)
    assert rules == ["sota"] and findings[0].severity == "warning"
    assert "skipped, as NatureBench skips it" in findings[0].message


def _set_baseline(root: Path, value) -> None:
    meta = json.loads((root / "metadata.json").read_text())
    metric = meta["performance_entries"][0]["metrics"][0]
    metric["baseline_score"] = {"value": value(metric["sota_score"][0]["value"]),
                                "method": "the same method"}
    (root / "metadata.json").write_text(json.dumps(meta))


def test_a_sota_equal_to_its_baseline_is_a_finding(broken):
    rules, findings = broken(lambda root: _set_baseline(root, lambda sota: sota))
    assert rules == ["sota"] and "equals the SOTA" in findings[0].message


def test_a_baseline_better_than_the_sota_is_a_finding(broken):
    # lower is better: a baseline with half the SOTA's error beats it
    rules, findings = broken(lambda root: _set_baseline(root, lambda sota: repr(float(sota) / 2)))
    assert rules == ["sota"] and "is better than the SOTA" in findings[0].message


@pytest.mark.parametrize("value", [lambda sota: repr(float(sota) * 2), lambda sota: "n/a"],
                         ids=["weaker", "unparsable"])
def test_a_weaker_or_unstated_baseline_passes(broken, value):
    assert broken(lambda root: _set_baseline(root, value))[0] == []


@pytest.mark.parametrize("root", SHIPPED, ids=lambda p: p.name)
def test_shipped_sota_is_stronger_than_the_baseline_with_provenance(root):
    """Every scored instance: a baseline figure, a SOTA strictly better than it (the
    check), and the SOTA's provenance (method, who ran it, when, with what command)."""
    from discoverygym.naturegym.format.package import load_package

    pkg = load_package(root)
    for inst in pkg.instances:
        assert inst.baseline is not None, inst.name
        assert float(inst.baseline["value"]) > inst.sota > 0, inst.name  # errors: lower wins
        (entry,) = inst.sota_text
        prov = entry["provenance"]
        assert {"method", "run_by", "date", "command", "label"} <= set(prov)
        # the script of 2026-11-25 (since retired), or the frozen method rerun since
        assert prov["command"] in (
            f"python tools/build_packages.py --only {root.name}",
            f"python -m discoverygym.suites.packages.frozen_sota {root.name}")
        assert "baseline" not in entry["method"], "the SOTA is not the baseline's method"


def test_doi_and_evaluation_mentions(broken):
    def mention(root: Path):
        (root / "problem/hint.md").write_text("Compare with doi 10.1038/s41586-020-1234-5; "
                                              "the scorer lives in evaluation/evaluator.py\n")
    rules, findings = broken(mention)
    messages = " ".join(f.message for f in findings)
    assert "DOI" in messages and "hidden evaluation/ folder" in messages


def test_scaffold_fails_only_on_its_todo_sota(tmp_path):
    root = scaffold("my-task", tmp_path)
    assert [f.rule for f in check_package(root)] == ["sota"]
    with pytest.raises(FileExistsError):
        scaffold("my-task", tmp_path)


# A package in the published layout written by hand from the spec (not by our writer):
# `main()` instead of run_evaluation(), a higher-is-better metric with a "±" SOTA and a
# second SOTA entry, data_archives, a Dockerfile environment.
def _published_fixture(root: Path) -> Path:
    (root / "problem/data/cells_a").mkdir(parents=True)
    (root / "problem/data_archives").mkdir(parents=True)
    (root / "evaluation/ground_truth/cells_a").mkdir(parents=True)
    (root / "environment").mkdir()
    (root / "licenses").mkdir()
    (root / "metadata.json").write_text(json.dumps({
        "task_name": "Count the cells",
        "workflow_topology": "strict_single_step",
        "methodology_paradigm": "supervised",
        "tooling_metadata": {},
        "domain_metadata": {"primary_domain": "biology", "sub_domain": "imaging",
                            "domain_tags": []},
        "compute_resource_requirements": {"cpu": 2, "gpu": 0, "runtime": "2h"},
        "performance_entries": [{"dataset_name": "cells_a", "metrics": [
            {"name": "accuracy", "is_primary": True, "metric_direction": "higher_is_better",
             "source_description": "fraction counted right", "unit": "",
             "sota_score": [{"value": "0.80 ± 0.02", "method": "Prior work A"},
                            {"value": "0.75", "method": "Prior work B"}],
             "baseline_score": {"value": "0.5", "method": "mean"}},
            {"name": "runtime", "is_primary": False, "metric_direction": "lower_is_better",
             "source_description": "", "unit": "s", "sota_score": [], "baseline_score": None}]}],
    }))
    (root / "problem/README.md").write_text(textwrap.dedent("""\
        # Counting
        ## Scientific problem
        Count objects in each image.
        ## Task objective
        Predict the count per image.
        ## Dataset information
        Images as lists of numbers.
        ## Evaluation metrics
        Accuracy.
        ## Output format
        counts.csv with one integer per line.
        ## Submission guidelines
        Put counts.csv in OUTPUT_DIR/cells_a/.
        """))
    (root / "problem/data_description.md").write_text("lists\n")
    (root / "problem/data/cells_a/images.txt").write_text("1 2\n3\n4 5 6\n7\n")
    (root / "evaluation/ground_truth/cells_a/counts.csv").write_text("2\n1\n3\n1\n")
    (root / "environment/Dockerfile").write_text("FROM python:3.11-slim\n")
    (root / "licenses/LICENSE").write_text("CC-BY-4.0\n")
    (root / "evaluation/evaluator.py").write_text(textwrap.dedent("""\
        import os
        from pathlib import Path
        HERE = Path(__file__).parent

        def main():
            out = Path(os.environ["OUTPUT_DIR"]) / "cells_a" / "counts.csv"
            truth = (HERE / "ground_truth/cells_a/counts.csv").read_text().split()
            try:
                guess = out.read_text().split()
                if len(guess) != len(truth):
                    raise ValueError("wrong number of lines")
                acc = sum(int(g) == int(t) for g, t in zip(guess, truth)) / len(truth)
                return {"cells_a": {"accuracy": acc, "runtime": None}}
            except (OSError, ValueError) as exc:
                return {"cells_a": {"accuracy": None, "runtime": None, "error": str(exc)}}
        """))
    return root


def test_hand_written_published_package_loads_checks_and_runs(tmp_path):
    root = _published_fixture(tmp_path / "pkgs" / "count-cells")
    assert check_package(root) == []
    suite = get_suite("packages")
    specs = suite.episodes(packages=str(tmp_path / "pkgs"))
    assert [s.task_id for s in specs] == ["count-cells"]
    episode = suite.episode("count-cells", packages=str(tmp_path / "pkgs"))
    view = episode.view()
    assert "Count objects" in view.prompt and "ground_truth" not in view.prompt
    assert view.call("write_file", {"path": "cells_a/counts.csv", "content": "2\n1\n3\n7\n"}) \
        .is_error is False
    result = view.call("evaluate", {})
    # accuracy 0.75 vs SOTA 0.80 (the best of the two entries): g = (0.75-0.8)/0.8
    assert result.data["g"]["cells_a"] == pytest.approx(-0.0625)
    view.call("submit", {})
    record = episode.record(agent="test")
    assert record.value == pytest.approx(-0.0625) and record.passed is False
    # The unknown package makes the baseline fail honestly, with a record.
    run_episodes(specs, out_dir=tmp_path / "run", agent="baseline", executor="serial",
                 show_progress=False)
    rec = read_records(tmp_path / "run" / "records.jsonl")[0]
    assert rec["passed"] is False and rec["value"] == -1.0


RV = CATALOG / "rv-holdout-forecast"


def _rv_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "rv"
    shutil.copytree(RV, dst)
    return dst


def test_table_ground_truth_rows_leaked_into_data(tmp_path):
    # The query table shares its times with the hidden table (that is allowed); adding
    # the hidden rv_ms column to it is a leak.
    root = _rv_copy(tmp_path)
    truth = (root / "evaluation/ground_truth/system_b/predictions.csv").read_text()
    (root / "problem/data/system_b/query.csv").write_text(truth.replace("rv_ms", "extra"))
    findings = check_package(root, dynamic=False)
    assert [f.rule for f in findings] == ["firewall"]
    assert "rows of the ground-truth tables" in findings[0].message
    assert findings[0].path == "problem/data/system_b/query.csv"


def test_one_ground_truth_row_in_prose_is_a_leak(tmp_path):
    root = _rv_copy(tmp_path)
    rows = (root / "evaluation/ground_truth/system_a/predictions.csv").read_text().splitlines()
    row = next(r for r in rows[1:] if not float(r.split(",")[2]).is_integer())
    readme = root / "problem/README.md"
    readme.write_text(readme.read_text() + f"\nFor example: {row}\n")
    findings = check_package(root, dynamic=False)
    assert [(f.rule, f.path) for f in findings] == [("firewall", "problem/README.md")]


def test_shared_key_column_alone_is_not_a_leak(tmp_path):
    # Times of the held-out epochs appear in query.csv by design; quoting a few in the
    # README is no leak either.
    root = _rv_copy(tmp_path)
    times = [line.split(",")[0] for line in
             (root / "problem/data/system_a/query.csv").read_text().splitlines()[1:6]]
    readme = root / "problem/README.md"
    readme.write_text(readme.read_text() + "\nFirst query times: " + ", ".join(times) + "\n")
    assert check_package(root, dynamic=False) == []


FLUID = CATALOG / "fluid-vorticity-forecast"


def test_binary_ground_truth_leaks(tmp_path):
    import numpy as np

    root = tmp_path / "fluid"
    shutil.copytree(FLUID, root)
    truth = root / "evaluation/ground_truth/flow_1/forecast.npy"
    shutil.copy(truth, root / "problem/data/flow_1/extra.npy")
    snapshots = root / "problem/data/flow_2/snapshots.npy"
    future = np.load(root / "evaluation/ground_truth/flow_2/forecast.npy")
    # The future frames appended to the snapshots, and stored as float64.
    np.save(snapshots, np.concatenate([np.load(snapshots), future[:1]]).astype(np.float64))
    findings = check_package(root, dynamic=False)
    assert {(f.rule, f.path) for f in findings} == {
        ("firewall", "problem/data/flow_1/extra.npy"),
        ("firewall", "problem/data/flow_2/snapshots.npy")}
    messages = " ".join(f.message for f in findings)
    assert "copy of the ground-truth file" in messages and "ground-truth arrays" in messages


def test_the_frozen_gravity_sota_reruns_and_beats_the_baseline():
    """Rerun the frozen SOTA method of gravity-force-law (naturegym/frozen_sota.py) on the
    shipped evaluation data: it recovers alpha to the recorded SOTA error, far below
    the baseline's, against the truth the builder's separate integration used."""
    import numpy as np

    from discoverygym.naturegym.format.package import load_package
    from discoverygym.suites.packages.baselines.solvers import force_law_alpha
    from discoverygym.suites.packages.frozen_sota import fit_force_law_orbit

    root = CATALOG / "gravity-force-law"
    for inst in load_package(root).scored_instances("evaluation"):
        table = np.loadtxt(root / "problem/data" / inst.name / "trajectory.csv", delimiter=",",
                           skiprows=1)
        truth = json.loads((root / "evaluation/ground_truth" / inst.name / "answer.json")
                           .read_text())["alpha"]
        simple = force_law_alpha(table[:, 0], table[:, 1:])
        assert abs(simple - truth) == pytest.approx(float(inst.baseline["value"]), rel=1e-6)
        error = abs(fit_force_law_orbit(table[:, 0], table[:, 1:], simple) - truth)
        assert error == pytest.approx(inst.sota, rel=0.05) and error < abs(simple - truth) / 100
