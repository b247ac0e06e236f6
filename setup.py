"""Build hooks, beside pyproject.toml (which holds everything else): record the git
commit the package is built from, so that `discoverygym --version` names it in an
installed wheel (core/about.py reads it). The sdist carries the file, so a wheel built
from the sdist (as `python -m build` does) keeps it; outside a checkout nothing is
written and the version says the commit is unknown."""

from __future__ import annotations

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

COMMIT_FILE = "_build_commit.txt"  # as core/about.py's COMMIT_FILE


def _commit() -> str | None:
    root = Path(__file__).resolve().parent
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        commit = _commit()
        if commit and not self.editable_mode:
            (Path(self.build_lib) / "discoverygym" / COMMIT_FILE).write_text(commit + "\n")


class Sdist(sdist):
    def make_release_tree(self, base_dir, files) -> None:
        super().make_release_tree(base_dir, files)
        commit = _commit()
        if commit:
            target = Path(base_dir) / "src" / "discoverygym" / COMMIT_FILE
            target.unlink(missing_ok=True)  # a hard link to the source tree's copy, if any
            target.write_text(commit + "\n")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
