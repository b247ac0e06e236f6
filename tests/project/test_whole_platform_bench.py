"""bench/whole_platform.py plans what the README says (the headline baseline of every
suite; with --all-roles every calibration agent too) and renders its JSON as the
README's table. The benchmark itself is not a test: it takes minutes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from discoverygym.core import calibration_table
from testpaths import REPO

ROOT = REPO
SCRIPT = ROOT / "bench" / "whole_platform.py"
RESULT = ROOT / "bench" / "results" / "whole_platform_headline_w2.json"

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
