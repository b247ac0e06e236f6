"""The fast lane: `make test-fast` runs `pytest -m "not slow"`, and tests/conftest.py
marks slow every test of the modules in SLOW_MODULES and the tests named in SLOW_TESTS, so the lane leaves them out while
`make test` (plain pytest) still runs them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import SLOW_MODULES, SLOW_TESTS
from testpaths import TESTS

REPO = TESTS.parent
# the lists name modules by file name (unique across the folders under tests/)
MODULES = {path.name: path for path in TESTS.rglob("test_*.py")}


def test_every_slow_module_exists():
    """A renamed or moved test file would silently rejoin the fast lane."""
    missing = sorted(name for name in SLOW_MODULES | set(SLOW_TESTS)
                     if name not in MODULES)
    assert missing == []


def test_every_slow_test_exists():
    """A renamed test would silently rejoin the fast lane."""
    assert set(SLOW_TESTS) <= set(MODULES)
    missing = [(module, name) for module, names in SLOW_TESTS.items() for name in names
               if not re.search(rf"^def {name}\(", MODULES[module].read_text(), re.M)]
    assert missing == []


def test_make_test_fast_deselects_the_slow_marker():
    recipe = re.search(r"^test-fast:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe and '-m "not slow"' in recipe.group(1)


def _collect(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "-p", "no:cacheprovider", *args], cwd=REPO,
                            capture_output=True, text=True, timeout=300)
    return result.stdout + result.stderr


def test_a_listed_module_is_left_out_of_the_fast_lane_only():
    """Both lanes collect through the same conftest hook; a module on the list is
    deselected by `-m "not slow"` and collected by plain pytest."""
    listed, unlisted = "tests/commands/test_calibrate_suites.py", "tests/core/test_keys.py"
    assert Path(listed).name in SLOW_MODULES and Path(unlisted).name not in SLOW_MODULES
    one_slow = "tests/suites/packages/test_packages_naturegym.py"
    slow_name = SLOW_TESTS[Path(one_slow).name][0]
    fast = _collect("-m", "not slow", listed, unlisted, one_slow)
    assert "test_calibrate_suites.py::" not in fast and "test_keys.py::" in fast, fast
    assert slow_name not in fast and "test_packages_naturegym.py::" in fast, fast
    assert re.search(r"\b\d+ deselected\b", fast), fast
    full = _collect(listed, one_slow)
    assert "test_calibrate_suites.py::" in full and slow_name in full, full


def test_test_file_names_are_unique_across_folders():
    """The slow lists and pytest's rootdir-less imports both key a module by its file
    name: two test files of one name in different folders would shadow each other."""
    names = [path.name for path in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)) == len(MODULES)
