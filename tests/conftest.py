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
