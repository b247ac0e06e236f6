"""The audit's attacks on the sandbox itself (oneshot.py, isolation.py), played at every
isolation level this host has, forced the way an operator forces one
($DISCOVERYGYM_SANDBOX_ISOLATION). Declared here, beside what they attack (see
core.audit_registry); suites with a verifier that runs answers (tpbench) play the same
at their verifier in their own attacks.py.

- Inherited descriptors: the script lists /proc/self/fd. Expected: pipes and /dev/null
  only, never a host file (before: the host's sandbox.log on descriptors 5 and 6).
- A reward overwrite by a detached process: the script forks a daemon that, after the
  run has returned, writes a forged reward into an open host folder. Expected at a level
  that meets VERIFIER_MINIMUM: nothing written (no process outlives the run, or the
  folder is out of its sight). Below it the level is weak by definition, and expected is
  that work asking for the minimum is refused there with nothing run.

`key-file` (issue #38): a process started as `discoverygym --key-file PATH` starts
(its entry point's hand-off, core/key_handoff.py) and this process reads the key, as a
server does before it serves; the key file is then opened to every user (as if its mode
allowed it), so only the seal guards it. At every level the script scans every
/proc/PID/cmdline and /proc/PID/environ for the path or the key and opens the path.
Expected: nothing found (before: at rlimits-uid the MCP server's command line named the
file, and a 0644 key file was read). At rlimits-only the sandbox would be the host's
own user, to whom the file and this process's memory are open: while a key is held,
nothing runs at that level (`resolve_level` refuses), which the family checks too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

FAMILY = "sandbox"
#: The weakest level at which the platform runs an answer it scores (tpbench's and
#: mad's verifiers ask for it through SandboxConfig.minimum_isolation).
VERIFIER_MINIMUM = "rlimits-uid"
#: When the detached forger wakes, and how long the audit waits for it.
FORGER_DELAY_S = 1.0
FORGER_WAIT_S = 2.0

LIST_FDS = """
import os
for fd in sorted(os.listdir("/proc/self/fd"), key=int):
    try:
        print(fd, os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
"""

DETACH_AND_FORGE = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(DELAY)
        try:
            with open(TARGET, "w") as fh:
                fh.write('{"reward": 1.0, "FORGED": true}')
        except OSError:
            pass
    os._exit(0)
print("detached")
"""


def host_files(listing: str) -> list[str]:
    """The descriptors of a /proc/self/fd listing that name a host file (not a pipe,
    /dev/null, the listing's own directory, or the sandbox's deleted capture files)."""
    out = []
    for line in listing.splitlines():
        _, _, target = line.partition(" ")
        if target.startswith(("pipe:", "anon_inode:", "/proc/")) or target == "/dev/null":
            continue
        if target.endswith("(deleted)") and "/tmp/" in target:
            continue
        out.append(line)
    return out


def working_levels() -> list[str]:
    from .isolation import LEVELS, _level_works

    return [level for level in LEVELS if _level_works(level, sys.executable)]


@contextmanager
def forced_level(level: str) -> Iterator[None]:
    """Force `level` for the runs inside, as $DISCOVERYGYM_SANDBOX_ISOLATION does, and
    put the variable back as it was."""
    from .isolation import LEVEL_ENV, QUIET_ENV

    before = {name: os.environ.get(name) for name in (LEVEL_ENV, QUIET_ENV)}
    os.environ[LEVEL_ENV] = level
    # The level is weak on purpose: the audit's table reports it, so no notice (whose
    # advice to install bubblewrap would be wrong where it is installed).
    os.environ[QUIET_ENV] = "1"
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _descriptors(level: str) -> tuple[bool, str]:
    from . import SandboxConfig, run_isolated

    with forced_level(level):
        result = run_isolated(LIST_FDS, config=SandboxConfig(preload={}, time_limit_s=30))
    found = host_files(result.stdout.decode(errors="replace"))
    return not found, (f"host files open: {found[:3]}" if found
                       else f"ran at {result.isolation}; pipes and /dev/null only")


def _forgers(levels: list[str], folder: Path) -> dict[str, tuple[bool, str]]:
    """Start one forger per level, wait once for all of them, then read what each wrote."""
    from . import SandboxConfig, SandboxUnavailable, meets, run_isolated

    started: dict[str, str] = {}
    verdicts: dict[str, tuple[bool, str]] = {}
    for level in levels:
        target = folder / f"reward-{level}.json"
        code = (DETACH_AND_FORGE.replace("DELAY", repr(FORGER_DELAY_S))
                .replace("TARGET", repr(str(target))))
        with forced_level(level):
            if meets(level, VERIFIER_MINIMUM):
                result = run_isolated(code, config=SandboxConfig(preload={}, time_limit_s=30))
                started[level] = result.isolation
                continue
            marker = folder / f"ran-{level}"
            try:
                run_isolated(f"open({str(marker)!r}, 'w')",
                             config=SandboxConfig(preload={},
                                                  minimum_isolation=VERIFIER_MINIMUM))
                verdicts[level] = (False, f"ran at {level} though {VERIFIER_MINIMUM} was asked")
            except SandboxUnavailable:
                ran = marker.exists()
                verdicts[level] = (not ran, f"weak level: work asking for {VERIFIER_MINIMUM} "
                                   f"is refused here{' but the script ran' if ran else ''}")
    if started:
        time.sleep(FORGER_WAIT_S)
    for level, isolation in started.items():
        forged = (folder / f"reward-{level}.json").exists()
        verdicts[level] = (not forged, f"ran at {isolation}; " + (
            "the detached process wrote the reward" if forged
            else "nothing written after the run returned"))
    return verdicts


def sandbox_attacks(target: AuditTarget) -> list[Outcome]:
    """Both attacks at every level this host has."""
    levels = working_levels()
    folder = Path(tempfile.mkdtemp(prefix="dg-audit-sandbox-"))
    os.chmod(folder, 0o777)  # open, as a verifier folder may be handed over
    try:
        outcomes = [guard(FAMILY, f"inherited descriptors at {level}",
                          "no host file open in the sandbox",
                          lambda level=level: _descriptors(level)) for level in levels]
        verdicts: dict[str, tuple[bool, str]] = {}

        def forged(level: str) -> tuple[bool, str]:
            if not verdicts:
                verdicts.update(_forgers(levels, folder))
            return verdicts[level]
        outcomes += [guard(FAMILY, f"a detached process rewrites a reward at {level}",
                           "nothing written after the run returns (weak level: refused)",
                           lambda level=level: forged(level)) for level in levels]
        return outcomes
    finally:
        shutil.rmtree(folder, ignore_errors=True)


KEY_FILE_FAMILY = "key-file"
#: A process started the way `discoverygym --key-file PATH` starts (its entry point
#: hands the key off first), kept alive until its stdin closes.
HOLD_KEY = ("from discoverygym.core.key_handoff import hand_off; hand_off(); import sys; "
            "print('ready', flush=True); sys.stdin.read()")
FIND_KEY = """
import glob, json
found, opened = [], False
for name in glob.glob('/proc/[0-9]*/cmdline') + glob.glob('/proc/[0-9]*/environ'):
    try:
        data = open(name, 'rb').read()
    except OSError:
        continue
    if PATH.encode() in data or SECRET.encode() in data:
        found.append(name[len('/proc/'):])
try:
    opened = SECRET in open(PATH).read()
except OSError:
    pass
print('FOUND', json.dumps({'processes': found, 'file': opened}))
"""


def _find_key(level: str, path: Path, secret: str) -> tuple[bool, str]:
    import json

    from . import SandboxConfig, SandboxUnavailable, run_isolated

    code = f"PATH = {str(path)!r}\nSECRET = {secret!r}\n" + FIND_KEY
    with forced_level(level):
        try:
            result = run_isolated(code, config=SandboxConfig(preload={}, time_limit_s=60))
        except SandboxUnavailable as exc:  # a level that cannot hide the key runs nothing
            return True, f"refused at {level}: {str(exc)[:120]}"
    text = result.stdout.decode(errors="replace")
    if "FOUND" not in text:
        return False, f"the scan did not run: {(text or result.stderr.decode())[-200:]!r}"
    found = json.loads(text.split("FOUND", 1)[1])
    ok = not found["processes"] and not found["file"]
    return ok, (f"ran at {result.isolation}; key or path in {found['processes'][:4]}, "
                f"key file {'read' if found['file'] else 'shut'}")


def key_file_attacks(target: AuditTarget, *, hand_off: bool = True) -> list[Outcome]:
    """The scan for the key and its path at every level of this host (`hand_off=False`
    starts the holder without its hand-off: the test that shows the hole)."""
    from ..core.key_handoff import HANDOFF_FD_ENV
    from ..core.keys import new_key, read_key_file, write_key_file

    folder = Path(tempfile.mkdtemp(prefix="dg-audit-keyfile-"))
    os.chmod(folder, 0o755)  # any uid may enter: only the file and the seal guard it
    path = folder / "eval.key"
    key = new_key()
    write_key_file(path, key)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCOVERYGYM_KEY")}
    if not hand_off:
        env[HANDOFF_FD_ENV] = ""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_KEY, "--key-file", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env)
    try:
        ready = holder.stdout.readline() if holder.stdout else b""
        read_key_file(path)  # as the server's own process does: the seal now covers it
        os.chmod(path, 0o644)
        outcomes = []
        for level in working_levels():
            outcomes.append(guard(
                KEY_FILE_FAMILY, f"scan every process's command line and environment, "
                f"open the key file, at {level}",
                "neither the key nor its path (rlimits-only: refused while a key is held)",
                lambda level=level: (_find_key(level, path, key.hex()) if ready
                                     else (False, "the key holder did not start"))))
        return outcomes
    finally:
        if holder.stdin:
            holder.stdin.close()
        try:
            holder.wait(timeout=10)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
        shutil.rmtree(folder, ignore_errors=True)


ATTACKS = (
    AttackFamily(FAMILY, "inherited descriptors and a detached reward forger at every "
                 "isolation level", sandbox_attacks, needs_interpreter=True),
    AttackFamily(KEY_FILE_FAMILY, "the key file and its path, looked for from inside the "
                 "sandbox at every isolation level", key_file_attacks,
                 needs_interpreter=True),
)
