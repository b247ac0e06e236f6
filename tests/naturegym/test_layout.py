"""NatureGym's tree (issue #34 item 2): each family lives in the folder of its domain,
and a module that several families draw on (a simulator, a model) lives in the shared
science layer (physics/, networks/), not inside one domain's folder, where a family of
another domain could not reach it without importing across domains."""

from __future__ import annotations

import ast
from pathlib import Path

import discoverygym.naturegym.families as families_package
from discoverygym.naturegym.families import DOMAIN_FOLDERS, FAMILIES

FAMILIES_DIR = Path(families_package.__file__).parent


def _family_modules() -> set[str]:
    return {cls.__module__ for cls in FAMILIES.values()}


def test_each_family_lives_in_its_domain_folder():
    for name, cls in FAMILIES.items():
        folder = DOMAIN_FOLDERS[cls.domain]
        assert cls.__module__.startswith(f"discoverygym.naturegym.families.{folder}."), \
            (name, cls.__module__)


def _imported_modules(path: Path, package: str) -> set[str]:
    """The modules of the package that one source file imports (relative imports
    resolved against `package`, the file's own package)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                out.add(".".join(base + ([node.module] if node.module else [])))
            elif node.module:
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_what_several_families_share_lives_in_the_shared_layer():
    """A helper module inside a domain folder (not a family's own module) serves at most
    one family; the stochastic block model both relational families draw from lives in
    networks/, as the Kepler and RV fits live in physics/."""
    family_modules = _family_modules()
    users: dict[str, set[str]] = {}
    for path in sorted(FAMILIES_DIR.glob("*/*.py")):
        module = ("discoverygym.naturegym.families."
                  + ".".join(path.relative_to(FAMILIES_DIR).with_suffix("").parts))
        if module not in family_modules:
            continue
        for imported in _imported_modules(path, module.rsplit(".", 1)[0]):
            if imported.startswith("discoverygym.naturegym.families.") and \
                    imported not in family_modules and not imported.endswith(".base"):
                users.setdefault(imported, set()).add(module)
    shared = {helper: sorted(by) for helper, by in users.items() if len(by) > 1}
    assert not shared, shared
    # the check sees the helpers a family does use (it is not vacuous)
    assert "discoverygym.naturegym.families.molecular_design.molecule_pool" in users
