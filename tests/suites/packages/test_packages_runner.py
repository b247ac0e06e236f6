"""The evaluator runner: its own process, a time and a memory cap, the result read after
a marker line; a crash, a timeout or garbage output is an evaluation error, not a score."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from discoverygym.naturegym.format.evaluator_runner import run_evaluator
from discoverygym.naturegym.format.package import load_package
from discoverygym.suites.packages.shipped import CATALOG


@pytest.fixture()
def package_with(tmp_path):
    def make(body: str):
        root = tmp_path / f"pkg{len(list(tmp_path.glob('pkg*')))}"
        shutil.copytree(CATALOG / "gravity-force-law", root)
        (root / "evaluation/evaluator.py").write_text(textwrap.dedent(body))
        return load_package(root)
    return make


def test_timeout_is_an_error(package_with, tmp_path):
    pkg = package_with("import time\ndef run_evaluation():\n    time.sleep(30)\n")
    ev = run_evaluator(pkg, tmp_path, timeout_s=1.0)
    assert not ev.ok and "timed out" in ev.error and ev.g == {}


def test_memory_cap_is_an_error(package_with, tmp_path):
    pkg = package_with("def run_evaluation():\n    return {'x': bytearray(2 * 1024**3)}\n")
    ev = run_evaluator(pkg, tmp_path, memory_mb=512)
    assert not ev.ok and "MemoryError" in ev.error


def test_prints_before_the_marker_are_ignored_and_nan_becomes_null(package_with, tmp_path):
    pkg = package_with("""\
        def run_evaluation():
            print('{"system_1": {"absolute_error": 0.0}}')  # a decoy before the marker
            return {"system_1": {"absolute_error": float("nan")},
                    "system_2": {"absolute_error": 0.5}}
        """)
    ev = run_evaluator(pkg, tmp_path)
    assert ev.ok and ev.raw["system_1"]["absolute_error"] is None
    assert ev.g["system_1"] == -1.0 and ev.g["system_2"] < -1.0


def test_no_entry_point_and_non_dict_results(package_with, tmp_path):
    ev = run_evaluator(package_with("x = 1\n"), tmp_path)
    assert not ev.ok and "neither run_evaluation() nor main()" in ev.error
    ev = run_evaluator(package_with("def main():\n    return [1, 2]\n"), tmp_path)
    assert not ev.ok and "non-dict" in ev.error


def test_evaluator_sees_output_dir_and_no_secrets(package_with, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    pkg = package_with("""\
        import os
        def run_evaluation():
            return {"system_1": {"absolute_error": 0.1, "out": os.environ["OUTPUT_DIR"],
                                 "keys": sorted(k for k in os.environ if "KEY" in k)}}
        """)
    ev = run_evaluator(pkg, tmp_path / "outputs")
    assert ev.raw["system_1"]["out"] == str((tmp_path / "outputs").resolve())
    assert ev.raw["system_1"]["keys"] == []


def test_evaluator_errors_name_no_host_path(package_with, tmp_path):
    """The agent reads an evaluator's traceback: it must not carry the package's path
    (the way to its ground truth)."""
    pkg = package_with("def run_evaluation():\n    raise ValueError('bad output')\n")
    ev = run_evaluator(pkg, tmp_path)
    assert not ev.ok and "bad output" in ev.error and "evaluator.py" in ev.error
    assert str(pkg.root) not in ev.error
