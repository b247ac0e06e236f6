"""The GPU path is installable and never needed: the `[gpu]` extra pins JAX's CUDA
wheels within bounds and stays out of `[all]`, and the prepared GPU benchmark runs on
a machine without a GPU (CPU figures only, saying so)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from testpaths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = REPO


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
