"""Every data file the package reads at run time is declared as package data, so a
plain (non-editable) install carries it: shipped task packages, problem files, data."""

from __future__ import annotations

import fnmatch

import pytest

from testpaths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = REPO
PACKAGE = ROOT / "src" / "discoverygym"


def test_every_data_file_is_declared_as_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["discoverygym"]
    missing = []
    for path in PACKAGE.rglob("*"):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".py", ".pyc"):
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        # setuptools' "**/*.ext" also matches files at the top of the package
        if not any(fnmatch.fnmatch(rel, g) or fnmatch.fnmatch(rel, g.removeprefix("**/"))
                   for g in globs):
            missing.append(rel)
    assert missing == [], f"not in [tool.setuptools.package-data]: {missing}"
