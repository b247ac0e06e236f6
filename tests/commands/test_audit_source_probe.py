"""The audit's "read the package source" attack judges what the sandbox can read, not
whether a folder exists (issue #38 item 6): from an installed wheel, at the bubblewrap
level, the package folder exists as an empty mount point and the old check reported a
finding on every suite. The probe is played with the sandbox (held) and without it
(the defence off: a finding), in the checkout's layout and in a wheel's."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from discoverygym.core import paths
from discoverygym.doors.shared.interpreter_attacks import read_package_code, source_unreadable
from discoverygym.sandbox import SandboxConfig, run_isolated
from discoverygym.sandbox.isolation import WEAK_LEVELS, resolve_level


@pytest.mark.parametrize("out, held", [
    ("READ 4021 bytes\nLISTED 30 entries", False),
    ("unreadable: PermissionError\nLISTED 30 entries", False),  # names leak: a finding
    ("READ 4021 bytes\nno listing", False),
    ("unreadable: FileNotFoundError\nno listing", True),
    ("unreadable: FileNotFoundError\nLISTED 0 entries", True),  # the wheel at bubblewrap
    ("unreadable: PermissionError\nno listing", True),
])
def test_the_judge_looks_at_what_was_read(out, held):
    assert source_unreadable(out) is held


def test_without_the_sandbox_the_probe_reads_the_package():
    """The defence off: the same code run as a plain process reads the package file."""
    done = subprocess.run([sys.executable, "-c", read_package_code()], capture_output=True,
                          text=True, timeout=60)
    assert "READ" in done.stdout and not source_unreadable(done.stdout), done.stdout


def _sandboxed(code: str) -> str:
    result = run_isolated(code, config=SandboxConfig(preload={}, time_limit_s=60))
    return result.stdout.decode(errors="replace")


@pytest.mark.skipif(resolve_level(SandboxConfig()) in WEAK_LEVELS,
                    reason="rlimits-only host: the package is not hidden at this level")
def test_the_sandbox_holds_the_probe_in_the_checkout():
    out = _sandboxed(read_package_code())
    assert source_unreadable(out), out


@pytest.mark.skipif(resolve_level(SandboxConfig()) in WEAK_LEVELS,
                    reason="rlimits-only host: the package is not hidden at this level")
def test_the_sandbox_holds_the_probe_in_a_wheels_layout(tmp_path, monkeypatch):
    """The package in a site-packages folder with no checkout around it (as pip installs
    a wheel): the probe reads nothing, while the folder may still exist inside."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    installed = site / "discoverygym"
    shutil.copytree(paths.package_dir(), installed,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setattr(paths, "package_dir", lambda: installed)
    code = read_package_code()
    assert str(installed / "core" / "paths.py") in code
    out = _sandboxed(code)
    assert source_unreadable(out), out
    assert (installed / "core" / "paths.py").is_file()  # on the host it is there
