"""The shipped catalogue: the packages this suite plays when no folder is named."""

from __future__ import annotations

from pathlib import Path

from ...naturegym.format.package import find_packages

CATALOG = Path(__file__).resolve().parent / "catalog"


def package_roots(packages: str | None = None) -> dict[str, Path]:
    """Package name -> root, for a folder of packages (or one package); default: the
    shipped catalog."""
    directory = Path(packages).expanduser().resolve() if packages else CATALOG
    return {p.name: p for p in find_packages(directory)}
