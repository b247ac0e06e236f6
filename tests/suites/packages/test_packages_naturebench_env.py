"""A package's evaluator runs in the package's own environment, built from its
environment/ folder (requirements.txt, or a Dockerfile's pip lines), cached by digest.
The build test installs a wheel made here, offline (no index): it needs nothing from
the network."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from test_packages_naturebench import FLUX, PACKAGES, correct_outputs

from discoverygym.naturegym.format.evaluator_runner import run_evaluator
from discoverygym.naturegym.format.package import load_package
from discoverygym.suites.packages.environment import (
    NATUREBENCH_BASE,
    EnvironmentBuildError,
    dockerfile_requirements,
    ensure_environment,
    package_requirements,
)


def test_dockerfile_pip_lines_are_read():
    reqs, notes = dockerfile_requirements(
        "FROM naturebench-base:v3\n"
        "RUN pip install --no-cache-dir scanpy==1.10.3 \\\n    anndata -i https://x/simple \\\n"
        "    && python -m pip install -U 'rdkit>=2024'\n"
        "RUN conda install -y -c bioconda mmseqs2 && apt-get install -y curl\n"
        "RUN echo pip install nothing\n")
    assert reqs == ["scanpy==1.10.3", "anndata", "rdkit>=2024"]
    assert len(notes) == 2 and "mmseqs2" in notes[0]


def test_their_base_image_is_a_named_environment():
    imports = {i for _p, i, _v in NATUREBENCH_BASE}
    assert len(NATUREBENCH_BASE) == 43
    assert {"sklearn", "torch", "h5py", "anndata", "rdkit"} <= imports
    reqs, _ = package_requirements(load_package(PACKAGES / FLUX), base="naturebench-base")
    assert "scikit-learn==1.6.1" in reqs
    with pytest.raises(EnvironmentBuildError):
        package_requirements(load_package(PACKAGES / FLUX), base="nope")


def make_wheel(folder: Path) -> Path:
    """A pure-Python wheel of one module, `nbprobe` (VALUE = 0.5), built by hand."""
    wheel = folder / "nbprobe-0.1-py3-none-any.whl"
    files = {
        "nbprobe/__init__.py": "VALUE = 0.5\n",
        "nbprobe-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: nbprobe\nVersion: 0.1\n",
        "nbprobe-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\n"
                                       "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + "nbprobe-0.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in {**files, "nbprobe-0.1.dist-info/RECORD": record}.items():
            zf.writestr(name, text)
    return wheel


@pytest.fixture()
def probe_package(tmp_path):
    """FLUX, whose evaluator needs `nbprobe`, which discoverygym's Python lacks."""
    root = tmp_path / FLUX
    shutil.copytree(PACKAGES / FLUX, root)
    make_wheel(root / "environment")
    (root / "environment" / "requirements.txt").write_text(
        "# the package's own dependency\nnbprobe-0.1-py3-none-any.whl\n")
    evaluator = root / "evaluation" / "evaluator.py"
    evaluator.write_text("import nbprobe\n" + evaluator.read_text())
    for name, text in correct_outputs(FLUX).items():
        (tmp_path / "out" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / name).write_text(text)
    return load_package(root), tmp_path / "out"


@pytest.mark.slow
def test_evaluator_runs_in_the_package_environment(probe_package, tmp_path):
    pkg, outputs = probe_package
    host = run_evaluator(pkg, outputs)
    assert not host.ok and "nbprobe" in host.error  # discoverygym's Python lacks it
    env = ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    own = run_evaluator(pkg, outputs, python=env.python)
    assert own.ok and all(g > -1 for g in own.g.values())
    # cached by digest: a second call reuses the folder, a changed requirement does not
    stamp = env.python.parent.stat().st_mtime_ns
    again = ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    assert again.path == env.path and env.python.parent.stat().st_mtime_ns == stamp
    (pkg.root / "environment" / "requirements.txt").write_text(
        "nbprobe-0.1-py3-none-any.whl\n# edited\n")
    assert ensure_environment(pkg, offline=True, root=tmp_path / "envs").digest == env.digest
    assert not any(p.name.startswith(".") for p in (tmp_path / "envs").iterdir())


def test_a_failed_build_leaves_nothing_and_says_why(probe_package, tmp_path):
    pkg, _ = probe_package
    (pkg.root / "environment" / "requirements.txt").write_text("../../../etc/evil.whl\n")
    with pytest.raises(EnvironmentBuildError, match="not a file in environment/"):
        ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    (pkg.root / "environment" / "requirements.txt").write_text("--index-url=http://x\n")
    with pytest.raises(EnvironmentBuildError, match="installer option"):
        ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    for local in ("../../home/project", "/etc", "pkg @ file:///etc/x"):
        (pkg.root / "environment" / "requirements.txt").write_text(local + "\n")
        with pytest.raises(EnvironmentBuildError, match="local path"):
            ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    (pkg.root / "environment" / "requirements.txt").write_text("x" * 400 + "\n")
    with pytest.raises(EnvironmentBuildError):
        ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    assert not (tmp_path / "envs").exists() or not any((tmp_path / "envs").iterdir())


@pytest.mark.slow
def test_an_install_that_fails_leaves_no_half_built_environment(probe_package, tmp_path):
    pkg, _ = probe_package
    (pkg.root / "environment" / "requirements.txt").write_text(
        "no-such-distribution-nbcompat==1.0\n")
    with pytest.raises(EnvironmentBuildError, match="failed"):
        ensure_environment(pkg, offline=True, root=tmp_path / "envs")
    assert list((tmp_path / "envs").iterdir()) == []


def test_unknown_environment_option_is_refused():
    from discoverygym.core import get_suite

    with pytest.raises(ValueError, match="Unknown environment"):
        get_suite("packages").episode(FLUX, packages=str(PACKAGES), environment="nope")
    assert json.dumps(NATUREBENCH_BASE)


@pytest.mark.slow
def test_the_agents_python_tool_runs_in_the_package_environment(probe_package, tmp_path,
                                                                 monkeypatch):
    from discoverygym.core import get_suite
    from discoverygym.doors.shared.interpreter_tool import InterpreterTool

    pkg, _ = probe_package
    monkeypatch.setenv("DISCOVERYGYM_CACHE", str(tmp_path / "cache"))
    episode = get_suite("packages").episode(FLUX, packages=str(pkg.root.parent),
                                            environment="package")
    tool = InterpreterTool(episode)
    try:
        result = tool.run("import nbprobe\nprint(nbprobe.VALUE)")
        assert not result.is_error and result.text.strip() == "0.5", result.text
        # as strongly isolated as the project's own interpreter (the env is readable by
        # the sandbox's user)
        from discoverygym.sandbox.isolation import isolation_level

        assert tool.isolation == isolation_level()
    finally:
        tool.close()
        episode.record()
    plain = get_suite("packages").episode(FLUX, packages=str(pkg.root.parent))
    assert plain.sandbox_python() is None
    plain.record()
