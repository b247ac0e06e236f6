"""A package's own Python environment, built from its environment/ folder.

NatureBench runs a package's evaluator (and the agent's code) in the package's Docker
image: their base image plus the package's own install lines. Here the same
requirements are installed into a virtual environment with `uv` (or, where uv is not
installed, `python -m venv` and pip), cached by the digest of what it holds, so the
evaluator imports what the package was written against instead of discoverygym's
Python.

What the environment holds, in order:
  - environment/requirements.txt, when present (one requirement per line);
  - else the `pip install` lines of environment/Dockerfile* (continuations and `&&`
    followed; flags dropped; conda and apt lines are not Python and are reported);
  - plus, when asked (`base="naturebench-base"`), NatureBench's base image's Python
    packages (NATUREBENCH_BASE: 43 pinned distributions, facts from their task-build
    guide's base_packages.json). Building that one downloads a few GB.

Installs need the network (or a local wheel named in requirements.txt); a failed build
raises EnvironmentBuildError with the installer's last lines, never a half-built
environment in the cache."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...naturegym.format.package import Package

#: NatureBench's base image (docker/Dockerfile.base): (pip name, import name, version).
NATUREBENCH_BASE: tuple[tuple[str, str, str], ...] = (
    ("numpy", "numpy", "1.26.4"),
    ("scipy", "scipy", "1.14.1"),
    ("pandas", "pandas", "2.2.3"),
    ("matplotlib", "matplotlib", "3.10.0"),
    ("seaborn", "seaborn", "0.13.2"),
    ("h5py", "h5py", "3.12.1"),
    ("tables", "tables", "3.10.1"),
    ("pyarrow", "pyarrow", "18.1.0"),
    ("networkx", "networkx", "3.4.2"),
    ("igraph", "igraph", "0.11.8"),
    ("sympy", "sympy", "1.13.1"),
    ("statsmodels", "statsmodels", "0.14.4"),
    ("scikit-image", "skimage", "0.24.0"),
    ("opencv-python-headless", "cv2", "4.11.0.86"),
    ("Pillow", "PIL", "11.1.0"),
    ("tqdm", "tqdm", "4.67.1"),
    ("rich", "rich", "13.9.4"),
    ("jupyter", "jupyter", "1.1.1"),
    ("torch", "torch", "2.6.0"),
    ("torchvision", "torchvision", "0.21.0"),
    ("torchaudio", "torchaudio", "2.6.0"),
    ("scikit-learn", "sklearn", "1.6.1"),
    ("xgboost", "xgboost", "2.1.3"),
    ("lightgbm", "lightgbm", "4.5.0"),
    ("catboost", "catboost", "1.2.7"),
    ("transformers", "transformers", "4.48.1"),
    ("datasets", "datasets", "3.2.0"),
    ("tokenizers", "tokenizers", "0.21.0"),
    ("lightning", "lightning", "2.5.0"),
    ("einops", "einops", "0.8.0"),
    ("timm", "timm", "1.0.12"),
    ("accelerate", "accelerate", "1.3.0"),
    ("optuna", "optuna", "4.2.0"),
    ("safetensors", "safetensors", "0.5.2"),
    ("sentencepiece", "sentencepiece", "0.2.0"),
    ("wandb", "wandb", "0.19.1"),
    ("anndata", "anndata", "0.11.3"),
    ("biopython", "Bio", "1.85"),
    ("rdkit", "rdkit", "2024.9.6"),
    ("ase", "ase", "3.23.0"),
    ("pymatgen", "pymatgen", "2024.11.13"),
    ("nibabel", "nibabel", "5.3.2"),
    ("nilearn", "nilearn", "0.11.1"),
)
NAMED_ENVIRONMENTS = {"naturebench-base": tuple(f"{p}=={v}" for p, _i, v in NATUREBENCH_BASE)}
MAX_REQUIREMENTS = 500
MAX_REQUIREMENT_CHARS = 300
BUILD_TIMEOUT_S = 1800.0


class EnvironmentBuildError(RuntimeError):
    """The package's environment could not be built; the message says why."""


@dataclass(frozen=True)
class PackageEnvironment:
    requirements: tuple[str, ...]
    digest: str
    path: Path
    notes: tuple[str, ...] = ()

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


_FLAG_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url",
                    "--extra-index-url", "-f", "--find-links", "--target", "-t",
                    "--prefix", "--root", "--trusted-host"}


def _pip_install_args(command: str) -> list[str] | None:
    """The requirements of one shell command, if it is a pip install."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    first = words[0].rsplit("/", 1)[-1]
    if first in ("pip", "pip3"):
        rest = words[1:]
    elif first.startswith("python") and words[1:3] == ["-m", "pip"]:
        rest = words[3:]
    else:
        return None  # pip must be the command ("echo pip install x" installs nothing)
    if not rest or rest[0] != "install":
        return None
    out, skip = [], False
    for w in rest[1:]:
        if skip:
            skip = False
        elif w in _FLAG_WITH_VALUE:
            skip = True
        elif not w.startswith("-"):
            out.append(w)
    return out


def dockerfile_requirements(text: str) -> tuple[list[str], list[str]]:
    """(requirements, notes) from a Dockerfile's RUN lines."""
    joined = re.sub(r"\\\s*\n", " ", text[:1_000_000])
    reqs, notes = [], []
    for line in joined.splitlines():
        line = line.strip()
        if not line.upper().startswith("RUN "):
            continue
        for command in re.split(r"&&|;", line[4:]):
            args = _pip_install_args(command.strip())
            if args is not None:
                reqs += args
            elif re.search(r"\b(conda|mamba|apt-get|apt)\s+install\b", command):
                notes.append(f"not installed (not pip): {' '.join(command.split())[:200]}")
    return reqs, notes


def package_requirements(pkg: Package, base: str | None = None) -> tuple[list[str], list[str]]:
    """(requirements, notes) of the package's environment/ folder (see the module doc)."""
    env = pkg.root / "environment"
    notes: list[str] = []
    reqs: list[str] = []
    req_file = env / "requirements.txt"
    if req_file.is_file() and not req_file.is_symlink():
        for line in req_file.read_text(errors="replace")[:1_000_000].splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                reqs.append(line)
    elif env.is_dir():
        for docker in sorted(env.glob("Dockerfile*")):
            if docker.is_file() and not docker.is_symlink():
                found, why = dockerfile_requirements(docker.read_text(errors="replace"))
                reqs += found
                notes += why
    if base is not None:
        if base not in NAMED_ENVIRONMENTS:
            raise EnvironmentBuildError(f"unknown named environment {base!r}; one of "
                                        f"{', '.join(NAMED_ENVIRONMENTS)}")
        reqs = list(NAMED_ENVIRONMENTS[base]) + reqs
    if len(reqs) > MAX_REQUIREMENTS or any(len(r) > MAX_REQUIREMENT_CHARS for r in reqs):
        raise EnvironmentBuildError(f"environment/ lists more than {MAX_REQUIREMENTS} "
                                    f"requirements or one longer than {MAX_REQUIREMENT_CHARS} "
                                    "characters")
    for r in reqs:
        if r.startswith("-"):
            raise EnvironmentBuildError(f"requirement {r[:80]!r} is an installer option")
        # A path names a folder of this host (its setup code would run): only wheels
        # inside environment/ are local requirements.
        if not r.endswith(".whl") and (r.startswith((".", "/", "~")) or "file:" in r):
            raise EnvironmentBuildError(f"requirement {r[:80]!r} is a local path; only "
                                        "wheels in environment/ may be")
    return reqs, notes


def _digest(reqs: list[str], files: list[Path]) -> str:
    h = hashlib.sha256()
    h.update(f"{sys.version_info[:3]}\n".encode())
    for r in reqs:
        h.update(r.encode() + b"\n")
    for f in files:  # a local wheel: its bytes, not its name
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:32]


def cache_root() -> Path:
    base = os.environ.get("DISCOVERYGYM_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "discoverygym")
    return Path(base) / "package-envs"


def _run(cmd: list[str], timeout_s: float) -> None:
    try:
        with tempfile.TemporaryDirectory(prefix="dg-env-build-") as cwd:  # no relative path
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise EnvironmentBuildError(f"{cmd[0]} timed out after {timeout_s:g} s") from None
    except OSError as exc:
        raise EnvironmentBuildError(f"cannot run {cmd[0]}: {exc}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-1500:].strip()
        raise EnvironmentBuildError(f"{Path(cmd[0]).name} failed (exit {proc.returncode}): "
                                    f"{tail}")


def ensure_environment(pkg: Package, *, base: str | None = None, offline: bool = False,
                       timeout_s: float = BUILD_TIMEOUT_S,
                       root: Path | None = None) -> PackageEnvironment:
    """The package's environment, built once per digest and reused (`offline`: no index,
    only local wheels and, for uv, its cache)."""
    reqs, notes = package_requirements(pkg, base)
    # A local wheel is named relative to environment/ (or absolutely).
    resolved = [str(pkg.root / "environment" / r) if r.endswith(".whl")
                and not Path(r).is_absolute() else r for r in reqs]
    wheels = [Path(r) for r in resolved if r.endswith(".whl")]
    inside = (pkg.root / "environment").resolve()
    for w in wheels:
        if not w.is_file() or w.is_symlink() or inside not in w.resolve().parents:
            raise EnvironmentBuildError(f"local wheel {w.name[:100]} is not a file in "
                                        "environment/")
    digest = _digest(resolved, wheels)
    target = (root or cache_root()) / digest
    env = PackageEnvironment(tuple(resolved), digest, target, tuple(notes))
    if env.python.exists():
        return env
    target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=target.parent))
    try:
        uv = shutil.which("uv")
        if uv:
            _run([uv, "venv", "--quiet", "--python", sys.executable, str(building)], timeout_s)
            if resolved:
                _run([uv, "pip", "install", "--quiet", "--python",
                      str(building / "bin" / "python"), *(["--offline"] if offline else []),
                      *resolved], timeout_s)
        else:
            _run([sys.executable, "-m", "venv", "--clear", str(building)], timeout_s)
            if resolved:
                _run([str(building / "bin" / "python"), "-m", "pip", "install", "--quiet",
                      "--disable-pip-version-check", *(["--no-index"] if offline else []),
                      *resolved], timeout_s)
        # mkdtemp made it private (0700): the sandboxed agent (another uid) runs it too.
        building.chmod(0o755)
        try:
            building.rename(target)  # atomic: the cache never holds a half-built one
        except OSError:
            if not env.python.exists():  # not a concurrent build that finished first
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return env
