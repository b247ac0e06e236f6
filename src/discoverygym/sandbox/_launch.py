"""Runs inside the sandbox, first: drop privileges, set resource limits, exec.

The host passes this file's source with `python -I -c` and one JSON argument:
{"uid", "gid", "limits": {RLIMIT_NAME: value}, "cwd", "argv"}. It imports nothing
from discoverygym (the package is not visible in the sandbox)."""

import ctypes
import json
import os
import resource
import signal
import sys


def main() -> None:
    cfg = json.loads(sys.argv[1])
    # Writing past RLIMIT_FSIZE should fail with EFBIG, not kill the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    # No setuid program can give the sandbox's processes back the privileges dropped
    # below (PR_SET_NO_NEW_PRIVS; bubblewrap sets it too).
    try:
        ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    uid, gid = cfg.get("uid"), cfg.get("gid")
    if uid is not None and os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    # Set after dropping privileges: RLIMIT_NPROC counts the processes of the new uid,
    # and is not enforced for root.
    for name, value in cfg["limits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    os.chdir(cfg["cwd"])
    os.execv(cfg["argv"][0], cfg["argv"])


main()
