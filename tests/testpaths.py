"""Where things are, for tests in any folder under tests/ (they mirror the package)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent  # the helpers (toy_suite, ...) and data/ live here
REPO = TESTS.parent
