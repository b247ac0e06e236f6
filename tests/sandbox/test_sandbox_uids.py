"""Sandbox uids are leased: no two live sandboxes of the machine share one, whatever
process they run in, and a uid a leftover process still runs as is never handed out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from discoverygym.sandbox import uids

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="uids are leased on root hosts only")


def test_colliding_starts_still_give_distinct_uids(monkeypatch):
    """The old allocation (pid * 97 + a counter) could give two processes one uid; with
    every start forced to the same candidate, held leases stay distinct."""
    monkeypatch.setattr(uids, "_first_candidate", lambda: 7)
    leases = [uids.lease_uid() for _ in range(5)]
    try:
        assert len({lease.uid for lease in leases}) == 5
    finally:
        for lease in leases:
            lease.release()
    again = uids.lease_uid()  # released uids are free again
    assert again.uid == leases[0].uid
    again.release()


def test_a_lease_holds_against_another_process(monkeypatch):
    monkeypatch.setattr(uids, "_first_candidate", lambda: 11)
    held = uids.lease_uid()
    try:
        code = ("from discoverygym.sandbox import uids\n"
                "uids._first_candidate = lambda: 11\n"
                "print(uids.lease_uid().uid)")
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=120, check=True)
        assert int(other.stdout) != held.uid
    finally:
        held.release()


def test_a_uid_with_a_live_process_is_skipped(monkeypatch):
    monkeypatch.setattr(uids, "_first_candidate", lambda: 23)
    busy = uids.UID_BASE + 23
    lease = uids.lease_uid(in_use=lambda uid: uid == busy)
    assert lease.uid == busy + 1
    lease.release()


def test_a_planted_lease_folder_is_refused(monkeypatch, tmp_path):
    """Someone who made the folder first (or a link in its place) could hold or steal
    uids: the lease refuses a folder that is not private to this user."""
    monkeypatch.setattr(uids.tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / "discoverygym-uid-leases").symlink_to(tmp_path)
    with pytest.raises(uids.NoUid, match="not a private folder"):
        uids.lease_uid()


def test_the_sandbox_layout_holds_its_uid_until_cleanup():
    from discoverygym.sandbox.config import SandboxConfig
    from discoverygym.sandbox.isolation import Layout

    layout = Layout.create("rlimits-uid", SandboxConfig())
    try:
        assert layout.uid is not None and layout.uid_lease.uid == layout.uid
        fd = os.open(uids.lease_folder() / str(layout.uid), os.O_RDWR)
        import fcntl
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.close(fd)
    finally:
        layout.cleanup()
    assert layout.uid_lease._fd is None
