"""The GPU path is installable and never needed: the `[gpu]` extra pins JAX's CUDA
wheels within bounds and stays out of `[all]`, and the prepared GPU benchmark runs on
a machine without a GPU (CPU figures only, saying so); the README's GPU table is the
one the measured JSON gives."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from testpaths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = REPO
SCRIPT = ROOT / "bench" / "mad_fluid_gpu.py"


def _extras() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"]["optional-dependencies"]


def test_gpu_extra_is_bounded_and_not_in_all():
    extras = _extras()
    (requirement,) = [Requirement(r) for r in extras["gpu"]]
    assert requirement.name == "jax" and requirement.extras == {"cuda12"}
    bounds = {spec.operator for spec in requirement.specifier}
    assert bounds == {">=", "<"}, requirement
    assert not any("gpu" in r for r in extras["all"])


@pytest.mark.slow
def test_gpu_benchmark_runs_without_a_gpu(tmp_path):
    pytest.importorskip("jax")
    out = tmp_path / "gpu.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "mad_fluid_gpu.py"),
                           "--sizes", "32", "--repeats", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    row = result["sizes"]["32"]
    assert row["cpu"]["s_per_time_unit"] > 0 and row["cpu"]["steps"] > 0
    if result["gpu"] is None:  # this machine: the figure says it is CPU only
        assert "gpu" not in row and "no GPU" in result["note"]
    else:
        assert row["cpu_over_gpu"] > 0


def _gpu_bench():
    pytest.importorskip("jax")
    spec = importlib.util.spec_from_file_location("mad_fluid_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_gpu_table_is_the_command_output_of_its_committed_json():
    """The GPU figures in the README are written from the measured JSON, never typed."""
    bench = _gpu_bench()
    results = [json.loads((ROOT / f).read_text()) for f in bench.README_TABLE]
    assert all(r["gpu"] and "H100" in r["gpu"] for r in results)
    for result in results:  # the same physics on both devices: round-off apart
        for row in result["sizes"].values():
            assert row["gpu_vs_cpu_max_rel_diff"] < 1e-12
    assert bench.main(["--check-readme"]) == 0


def test_a_stale_gpu_table_is_caught_and_rewritten(tmp_path, monkeypatch):
    bench = _gpu_bench()
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- fluid-gpu:begin -->\n| typed by hand |\n"
                      "<!-- fluid-gpu:end -->\nafter\n")
    monkeypatch.setattr(bench, "README", readme)
    assert bench.main(["--check-readme"]) == 1
    assert bench.main(["--write-readme"]) == 0
    text = readme.read_text()
    assert "typed by hand" not in text and "| 512² | 229 |" in text
    assert text.startswith("intro\n") and text.endswith("after\n")
    assert bench.main(["--check-readme"]) == 0
