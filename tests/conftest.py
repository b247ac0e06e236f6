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
