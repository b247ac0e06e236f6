"""bench/whole_platform.py plans what the README says (the headline baseline of every
suite; with --all-roles every calibration agent too) and renders its JSON as the
README's table. The benchmark itself is not a test: it takes minutes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from discoverygym.core import calibration_table
from testpaths import REPO

ROOT = REPO
SCRIPT = ROOT / "bench" / "whole_platform.py"
RESULT = ROOT / "bench" / "results" / "whole_platform_headline_w2.json"

sys.path.insert(0, str(ROOT / "bench"))  # as when the script runs: its folder first
import revisions  # noqa: E402  (bench/revisions.py)

spec = importlib.util.spec_from_file_location("whole_platform", SCRIPT)
whole_platform = importlib.util.module_from_spec(spec)
sys.modules["whole_platform"] = whole_platform  # dataclasses look their module up
spec.loader.exec_module(whole_platform)


def test_headline_covers_every_built_in_suite_and_all_roles_every_agent():
    headline = whole_platform.runs(all_roles=False)
    suites = {suite for _, suite, _, _, _ in headline}
    assert suites == {"gravity", "stargazer", "mad", "tpbench", "packages"}
    everything = whole_platform.runs(all_roles=True)
    for label, suite, _, _, _ in headline:
        agents = {a for lab, _, _, a, _ in everything if lab == label}
        wanted = {a for role in calibration_table(suite).values() for a in role}
        assert agents >= wanted, (label, wanted - agents)


def test_the_committed_figures_render_as_the_readme_table():
    done = subprocess.run([sys.executable, str(SCRIPT), "--markdown-from", str(RESULT)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in whole_platform.README.read_text()
    assert "load average" in done.stdout and "| **total** |" in done.stdout


def test_an_unknown_suite_is_one_line_and_exit_1():
    done = subprocess.run([sys.executable, str(SCRIPT), "--suites", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: no suite matches --suites 'nope'"


def test_every_readme_table_is_the_command_output_of_its_committed_json():
    """The whole-platform tables of docs/scale.md are written by `--write-readme` from the JSON
    files in README_TABLES, never by hand: re-rendering them changes nothing."""
    for files in whole_platform.README_TABLES.values():
        assert all((ROOT / f).exists() for f in files), files
    readme = whole_platform.README.read_text()
    assert whole_platform.readme_with_tables(readme) == readme
    done = subprocess.run([sys.executable, str(SCRIPT), "--check-readme"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_stale_readme_table_is_caught_and_rewritten(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    name, files = next(iter(whole_platform.README_TABLES.items()))
    readme.write_text(f"intro\n<!-- whole-platform:{name}:begin -->\n| typed by hand |\n"
                      f"<!-- whole-platform:{name}:end -->\nafter\n")
    monkeypatch.setattr(whole_platform, "README_TABLES", {name: files})
    monkeypatch.setattr(whole_platform, "README", readme)
    assert whole_platform.main(["--check-readme"]) == 1
    assert whole_platform.main(["--write-readme"]) == 0
    text = readme.read_text()
    assert "typed by hand" not in text and text.startswith("intro\n") and text.endswith("after\n")
    assert whole_platform.render([ROOT / f for f in files]) in text
    assert whole_platform.main(["--check-readme"]) == 0


def test_suite_args_are_label_then_arguments():
    assert whole_platform.parse_suite_args(["mad quantum=--seeds 0", "stargazer=--tasks a,b"]) \
        == {"mad quantum": ["--seeds", "0"], "stargazer": ["--tasks", "a,b"]}
    done = subprocess.run([sys.executable, str(SCRIPT), "--suite-args", "no-equals-sign"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.count("\n") == 1


def _record(task: str, seed: int, passed: bool, score: float, **options) -> dict:
    return {"task_id": task, "seed": seed, "options": options, "passed": passed,
            "score": score, "value": score}


def _load_compare_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("compare_records",
                                                  ROOT / "tools" / "compare_records.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_runs_records_are_compared_case_by_case(tmp_path):
    """--against says which cases changed verdict or score beyond 1e-9 relative; a case
    is matched by task, seed and the options both revisions record (mad gained a field)."""
    ours = [_record("period", 0, True, 1.0, world="A"),
            _record("period", 0, True, 2.0, world="B"),
            _record("mass", 1, False, 0.5, world="A", variant="predict"),
            _record("mass", 2, True, 0.25, world="A"),
            _record("exact", 3, True, 1.2e-16),
            _record("only-here", 0, True, 1.0)]
    theirs = [_record("period", 0, True, 2.0 * (1 + 1e-12), world="B"),
              _record("period", 0, True, 1.0, world="A"),
              _record("mass", 1, True, 0.5, world="A"),
              _record("mass", 2, True, 0.25 * (1 + 1e-6), world="A"),
              _record("exact", 3, True, 4.2e-17),  # zero but for rounding: the same
              _record("only-there", 0, True, 1.0)]
    for name, records in (("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in records)
                                     + "not json\n")
    got = revisions.compare_records(tmp_path / "ours", tmp_path / "theirs")
    assert (got["matched"], got["only_this"], got["only_rev"]) == (5, 1, 1)
    assert (got["passed_differ"], got["score_differ"]) == (1, 1)
    # tools/compare_records.py calls the same numbers equal (verify's tolerances)
    tool = _load_compare_tool()
    assert tool.close(1.2e-16, 4.2e-17, tool.REL_TOL)
    assert tool.close(2.0, 2.0 * (1 + 1e-12), tool.REL_TOL)
    assert not tool.close(0.25, 0.25 * (1 + 1e-6), tool.REL_TOL)
    assert any(e.startswith("mass seed 1") for e in got["examples"])
    assert any(e.startswith("mass seed 2") for e in got["examples"])


def test_the_sides_alternate_and_a_side_tree_is_what_runs(tmp_path):
    assert revisions.order(1) == ["this", "rev"]
    assert revisions.order(2) == ["this", "rev", "rev", "this"]
    commit = revisions.resolve(ROOT, "HEAD")
    src = revisions.side_tree(ROOT, commit, tmp_path)
    env = revisions.run_env(src, tmp_path / "cache")
    assert env["DISCOVERYGYM_CACHE"] == str(tmp_path / "cache")
    assert revisions.imported_from(env) == src.resolve()


def test_an_unknown_revision_is_one_line_and_exit_1():
    done = subprocess.run([sys.executable, str(SCRIPT), "--against", "no-such-rev-xyz",
                           "--suites", "tpbench"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: --against 'no-such-rev-xyz': not a commit")


def test_an_against_result_renders_with_ratios_and_record_differences():
    row = {"label": "gravity", "agent": "expert-adaptive", "episodes": 206,
           "this": {"wall_s": 50.0, "cpu_s": 80.0}, "rev": {"wall_s": 100.0, "cpu_s": 120.0},
           "wall_ratio": 2.0, "cpu_ratio": 1.5,
           "records": {"matched": 206, "only_this": 0, "only_rev": 0, "passed_differ": 0,
                       "score_differ": 3}}
    result = {"machine": {"cpu_count": 2, "cpu_model": "x", "memory_gb": 24, "python": "3.11"},
              "executor": "process", "workers": 2, "loadavg_before": [0.1, 0.1, 0.1],
              "loadavg_after": [1, 1, 1], "against": {"rev": "0f73b85", "commit": "0f73b85" * 5,
                                                       "rounds": 1},
              "suites": [row], "total": whole_platform.totals([row], "this", "rev")}
    text = whole_platform.against_markdown(result)
    assert "| gravity | `expert-adaptive` | 206 | 50 / 80 | 100 / 120 | 2.00x | 1.50x | " \
           "206 matched: 0 / 3 |" in text
    assert "**2.00x** | **1.50x**" in text
