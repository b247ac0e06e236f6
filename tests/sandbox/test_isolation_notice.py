"""The sandbox's isolation line is said once per command (issue 36: tpbench and
calibrate printed it 2-6 times, once per worker process), as one plain line (no raw
Python warning with a file path and source line), and not at all for the levels the
audit forces on purpose (its table reports them; the advice to install bubblewrap was
wrong where bubblewrap is installed)."""

from __future__ import annotations

import os
import subprocess
import sys

from testpaths import REPO

DRIVER = """
from discoverygym.run.executors import run_process
from discoverygym.sandbox import SandboxConfig
from discoverygym.sandbox.isolation import notices_once_per_command, resolve_level

notices_once_per_command()  # what every discoverygym command does first
resolve_level(SandboxConfig())  # the driver's own sandbox, if it has one
for _ in run_process([(resolve_level, (SandboxConfig(),))] * 4, workers=2):
    pass
"""

FORCED = """
from discoverygym.sandbox import SandboxConfig
from discoverygym.sandbox.attacks import forced_level
from discoverygym.sandbox.isolation import resolve_level

with forced_level("rlimits-only"):
    resolve_level(SandboxConfig())
"""


def _stderr(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    for name in ("DISCOVERYGYM_SANDBOX_NOTICE", "DISCOVERYGYM_SANDBOX_QUIET",
                 "DISCOVERYGYM_SANDBOX_ISOLATION"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_the_isolation_line_is_said_once_per_command_across_workers():
    stderr = _stderr(DRIVER)
    lines = [line for line in stderr.splitlines() if line.startswith("discoverygym sandbox:")]
    assert len(lines) == 1, stderr
    assert "Warning" not in stderr and ".py:" not in stderr  # no raw Python warning


def test_a_level_forced_by_the_audit_is_not_announced():
    stderr = _stderr(FORCED)
    assert "WEAK SANDBOX" not in stderr and "bubblewrap" not in stderr, stderr
    assert "Warning" not in stderr
