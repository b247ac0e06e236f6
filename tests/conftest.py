"""Shared fixtures. Every test runs with its own cache directory so nothing leaks
between tests or into the user's cache."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    cache = os.environ.get("DISCOVERYGYM_TEST_CACHE") or str(tmp_path_factory.mktemp("dgcache"))
    os.environ["DISCOVERYGYM_CACHE"] = cache
    yield


@pytest.fixture(autouse=True)
def _public_draws():
    """Tests draw publicly unless they give a key: a DISCOVERYGYM_KEY(_FILE) of the
    developer's, or one a test's code set (the verifiers eval split sets a fresh key
    file), must not key the records of the tests after it."""
    names = ("DISCOVERYGYM_KEY", "DISCOVERYGYM_KEY_FILE")
    saved = {name: os.environ.pop(name, None) for name in names}
    yield
    for name in names:
        os.environ.pop(name, None)
        if saved[name] is not None:
            os.environ[name] = saved[name]


# The fast lane (`make test-fast`, `pytest -m "not slow"`) leaves out the tests marked
# slow and every test of these modules: the whole-pipeline checks a developer runs before
# a commit, not between edits (calibrations, golden records, Harbor trials, the sandbox's
# attack battery, the audit, the README's and docs' commands run end to end). `make test`
# runs them all. One list here rather than a marker in each file: the files change on
# many branches. tests/test_lanes.py keeps the list to files that exist.
SLOW_MODULES = frozenset({
    "test_audit.py",
    "test_audit_registry.py",
    "test_calibrate.py",
    "test_calibrate_suites.py",
    "test_doors_doc.py",
    "test_golden_records.py",
    "test_gravity_calibration.py",
    "test_gravity_resume.py",
    "test_harbor_trials.py",
    "test_mad_calibration.py",
    "test_mad_quantum_calibration.py",
    "test_mad_quantum_world.py",
    "test_plugin_doors.py",
    "test_readme_commands.py",
    "test_sandbox_attacks.py",
    "test_tpbench_calibration.py",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
