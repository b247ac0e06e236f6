"""The python blocks of the docs run, or are the code they quote.

Blocks are found with mktestdocs (`grab_code_blocks`) in README.md, docs/*.md and every
README under src/. A block that starts with `def NAME(` quotes a function of the package
(a suite README quoting its scoring rule): it must be that function's source, verbatim,
so the README and the code cannot disagree on a rule. Every other block runs as written
in a fresh interpreter from an empty folder and must exit 0 leaving nothing behind.
docs/doors.md's blocks start servers and clients; tests/doors/test_doors_doc.py (MCP,
Gymnasium) and tests/doors/openenv/test_openenv_door.py (OpenEnv, in its own environment) run those,
and the last test here checks that they are all of that file's python blocks."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest
from mktestdocs import grab_code_blocks

from testpaths import REPO

ROOT = REPO
PACKAGE = ROOT / "src" / "discoverygym"
DOORS = ROOT / "docs" / "doors.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted(PACKAGE.rglob("README.md"))]
# Blocks that take over ~5 s on the shared 2-core machine (a sandbox start, an import of
# the audit machinery), by the document that holds them.
SLOW_DOCS = {"src/discoverygym/sandbox/README.md"}


def _blocks() -> list[tuple[str, int, str]]:
    found = []
    for path in DOCS:
        if path == DOORS:
            continue
        for index, block in enumerate(grab_code_blocks(path.read_text(), lang="python")):
            found.append((str(path.relative_to(ROOT)), index, block))
    return found


BLOCKS = _blocks()
QUOTES = [b for b in BLOCKS if re.match(r"def \w+\(", b[2])]
SCRIPTS = [b for b in BLOCKS if b not in QUOTES]


def test_the_docs_hold_both_kinds_of_block():
    assert len(QUOTES) >= 3 and len(SCRIPTS) >= 2


def _quoted_source(doc: str, name: str) -> str:
    """The source of the function `name` in the modules beside the document, else in
    the one module of the package that defines it (the packages suite quotes the scoring
    rule of naturegym/format/scoring.py); read with ast, not imported: the quote is
    compared with the text of the code."""
    folder = (ROOT / doc).parent
    for modules in (sorted(folder.glob("*.py")),
                    sorted((ROOT / "src" / "discoverygym").rglob("*.py"))):
        found = []
        for module in modules:
            text = module.read_text()
            found += [ast.get_source_segment(text, node) for node in ast.parse(text).body
                      if isinstance(node, ast.FunctionDef) and node.name == name]
        if len(found) == 1:
            return found[0]
        assert not found, f"{doc} quotes {name}(), which {len(found)} modules define"
    raise AssertionError(f"{doc} quotes {name}(), which no module of the package defines")


@pytest.mark.parametrize("doc, index, block", QUOTES, ids=[f"{d}#{i}" for d, i, _ in QUOTES])
def test_a_quoted_function_is_the_packages_own_source(doc, index, block):
    name = re.match(r"def (\w+)\(", block).group(1)
    assert block.strip() == _quoted_source(doc, name).strip(), \
        f"{doc} quotes an old {name}(): update the block"


@pytest.mark.parametrize("doc, index, block", [
    pytest.param(*b, marks=pytest.mark.slow) if b[0] in SLOW_DOCS else b for b in SCRIPTS],
    ids=[f"{d}#{i}" for d, i, _ in SCRIPTS])
def test_a_python_block_runs_as_written(doc, index, block, tmp_path):
    env = dict(os.environ)
    env.pop("DISCOVERYGYM_PLUGINS", None)  # as a reader has it: no test plugin
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 0, (doc, index, done.stderr[-3000:])
    assert list(tmp_path.iterdir()) == [], f"{doc} block {index} left files behind"


def test_every_python_block_of_doors_md_is_run_by_a_door_test():
    text = DOORS.read_text()
    headings = [section.splitlines()[0] for section in text.split("\n## ")[1:]
                for _ in grab_code_blocks(section, lang="python")]
    assert len(headings) == len(grab_code_blocks(text, lang="python")) == 3
    assert all(h.startswith(("MCP", "Gymnasium", "OpenEnv")) for h in headings), headings
    tests = (ROOT / "tests" / "doors" / "test_doors_doc.py").read_text()
    assert '_blocks("MCP", "python")' in tests and '_blocks("Gymnasium", "python")' in tests
    assert '"docs" / "doors.md"' in (ROOT / "tests" / "doors" / "openenv" / "test_openenv_door.py").read_text()
