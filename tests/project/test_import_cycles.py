"""No import cycle in the package: no module imports, directly or through others, a
module that imports it back, counting imports made inside functions (a lazy import
hides a cycle from the import order but not from the design).

How the graph is read: every `.py` file under src/discoverygym that Python can import
by name is a module; `import a.b` and `from a import b` are arrows to `a.b` when it is
a module, else to `a` (a package's `__init__`). The parent packages Python runs first are
not arrows: a package that imports its own submodules would otherwise be a cycle with
each of them, though nothing can half-initialise there.

Imports under `if TYPE_CHECKING:` are left out. They never run, so they cannot leave a
module half-initialised or decide an import order, and with `from __future__ import
annotations` they only name a type in a hint; a module may name in its hints a class
of a module that uses it (a world and the scorer it hands itself to). Dynamic imports by
name (`importlib.import_module` on a registry's "module:Class" strings) are not arrows
either: they are how a registry finds plugins, and a string is not a dependency of the
module holding it.

Which layer may import which (core below everything, suites independent, ...) is not
this file's concern: pyproject.toml's [tool.importlinter] contracts state it and
tests/project/test_import_contracts.py runs `lint-imports` on them."""

from __future__ import annotations

import ast
from pathlib import Path

from testpaths import REPO

PACKAGE_ROOT = REPO / "src"


def _modules(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Importable module name -> (file, is a package's __init__)."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        if all(part.isidentifier() for part in parts):  # catalog data folders are not
            out[".".join(parts)] = (path, is_package)
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks (their else branches excluded)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                  "typing.TYPE_CHECKING"):
            for statement in node.body:
                inside.update(id(sub) for sub in ast.walk(statement))
    return inside


def import_graph(src: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (anywhere in its code)."""
    modules = _modules(src, package)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_nodes(tree)
        targets = graph.setdefault(name, set())
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                for alias in node.names:
                    sub = f"{origin}.{alias.name}"
                    target = sub if sub in modules else origin
                    if target in modules and target != name:
                        targets.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    return "; ".join(f"{a} -> {b}" for a in component for b in sorted(graph[a] & members))


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE_ROOT, "discoverygym")
    assert len(graph) > 100  # the whole package was read
    found = cycles(graph)
    assert found == [], "\n".join(_describe(graph, c) for c in found)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from .a import f\n",
        "pkg/a.py": "from .b import g\ndef f():\n    return g()\n",
        "pkg/b.py": "def g():\n    from . import a\n    return a\n",
        "pkg/c.py": "import pkg.b\n",
    })
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.b"] == {"pkg.a"} and graph["pkg.c"] == {"pkg.b"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_a_cycle_through_a_package_init_and_a_longer_loop_are_found(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from .x import X\n",
        "pkg/x.py": "X = 1\n",
        "pkg/y.py": "from pkg import X\n",  # the package's __init__, not a submodule
        "pkg/sub/__init__.py": "",
        "pkg/sub/p.py": "from ..sub import q\n",
        "pkg/sub/q.py": "from . import r\n",
        "pkg/sub/r.py": "def late():\n    import pkg.sub.p\n",
    })
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.y"] == {"pkg"}
    assert cycles(graph) == [["pkg.sub.p", "pkg.sub.q", "pkg.sub.r"]]
    _write(tmp_path, {"pkg/x.py": "from . import y\nX = 1\n"})
    assert ["pkg", "pkg.x", "pkg.y"] in cycles(import_graph(tmp_path, "pkg"))


def test_type_checking_imports_are_not_arrows_but_their_else_branch_is(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import B\n",
        "pkg/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from .a import A\nB = 1\n"),
    })
    assert cycles(import_graph(tmp_path, "pkg")) == []
    _write(tmp_path, {"pkg/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    pass\nelse:\n    from .a import A\nB = 1\n")})
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
