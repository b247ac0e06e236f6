"""Isolation levels and the command lines that put a Python process in a sandbox.
(One module on purpose, over 500 lines: the two namespace builders must mount the same
view in the same order, and reading them side by side is how that stays true.)

Levels, strongest first:

- "bubblewrap": `bwrap` builds a fresh filesystem view from an allow-list (system
  directories, the Python installation and the venv, read-only; a private home and
  /tmp), with new PID, network, IPC and UTS namespaces. The project's checkout,
  caches and run directories are simply not there.
- "unshare": the same filesystem view built by hand in new mount/PID/network
  namespaces (`unshare` + `mount` + `chroot`), for hosts without bubblewrap.
- "rlimits-uid": a plain subprocess (no namespaces) that runs as a uid of its own
  (root hosts only), with the hidden paths denied to that uid by an ACL entry
  (seal.py): the cache, the package source and the run directories are unreadable,
  and every process of the sandbox can be killed by uid. Other host files and the
  network are NOT isolated; we warn.
- "rlimits-only": a plain subprocess with resource limits and a scrubbed environment,
  running as the host's own user. Files and network are NOT isolated, and a process
  it detaches can outlive it; we warn loudly.

At every level: the environment is built from an allow-list (no API keys) and resource
limits apply (address space, CPU, processes, file size). At every level but
rlimits-only, when the host runs as root the sandboxed process drops to a uid of its
own, so RLIMIT_NPROC is enforced, root-only files are unreadable, and the whole
sandbox can be killed by uid. Work that must not run below some level names it
(`SandboxConfig.minimum_isolation`): below it nothing runs."""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import functools
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.safe_paths import chown_tree
from . import seal, uids
from .config import SandboxConfig

LEVELS = ("bubblewrap", "unshare", "rlimits-uid", "rlimits-only")
WEAK_LEVELS = frozenset({"rlimits-uid", "rlimits-only"})
NAMESPACE_LEVELS = frozenset({"bubblewrap", "unshare"})
SANDBOX_HOME = "/home/agent"
_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
_DEVICES = ("null", "zero", "full", "random", "urandom")

_LAUNCH_SOURCE = (Path(__file__).with_name("_launch.py")).read_text()


class SandboxUnavailable(RuntimeError):
    """The requested isolation level cannot be used on this host, or the level this
    host has is below the work's minimum (then `level` names it)."""

    def __init__(self, message: str, level: str = "") -> None:
        super().__init__(message)
        self.level = level


def strength(level: str) -> int:
    """A level as a number, for readers that take numbers only (Harbor's reward.json):
    4 bubblewrap, 3 unshare, 2 rlimits-uid, 1 rlimits-only, 0 for anything else."""
    return len(LEVELS) - LEVELS.index(level) if level in LEVELS else 0


def meets(level: str, minimum: str | None) -> bool:
    """Whether `level` is at least as strong as `minimum` (None: any level)."""
    if minimum is None:
        return True
    if minimum not in LEVELS:
        raise SandboxUnavailable(f"unknown isolation level {minimum!r}; levels: {', '.join(LEVELS)}")
    return LEVELS.index(level) <= LEVELS.index(minimum)


def python_executable(config: SandboxConfig) -> str:
    # Normalised but not resolved: `../.venv/bin/python` must still name the venv (its
    # symlink target is the base interpreter), and a path with `..` cannot be bound.
    return os.path.abspath(config.python or sys.executable)


@functools.cache
def _python_dirs(python: str) -> tuple[str, ...]:
    """Directories the interpreter needs: its prefixes and site-packages."""
    code = ("import json, site, sys; print(json.dumps([sys.prefix, sys.base_prefix, "
            "sys.exec_prefix, sys.base_exec_prefix, *site.getsitepackages()]))")
    out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    dirs = {os.path.realpath(p) for p in json.loads(out) if os.path.isdir(p)}
    dirs |= {os.path.abspath(p) for p in json.loads(out) if os.path.isdir(p)}
    # The executable may be a symlink chain (venv -> pyenv/system python).
    dirs.add(os.path.dirname(os.path.abspath(python)))
    dirs.add(os.path.dirname(os.path.realpath(python)))
    return tuple(sorted(dirs))


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    """Drop paths that lie inside another path of the list."""
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return out


def hidden_paths(config: SandboxConfig) -> list[str]:
    """Host paths the sandbox must not see: the cache (both the configured and the
    default root), the package source and its checkout, ./runs, every key file this
    process has read (core/keys.py), config.hidden_paths."""
    from ..core import paths
    from ..core.keys import key_files_read

    found: list[Path] = [paths.cache_root(), paths.package_dir(), Path.cwd() / "runs"]
    if os.environ.get("DISCOVERYGYM_CACHE"):
        found.append(Path(os.environ["DISCOVERYGYM_CACHE"]))
    package = paths.package_dir()
    for parent in package.parents:  # the source checkout (src layout or flat)
        if (parent / "pyproject.toml").exists():
            found.append(parent)
            break
    found.extend(Path(p) for p in key_files_read())
    found.extend(Path(p) for p in config.hidden_paths)
    out = []
    for p in found:
        for variant in {os.path.abspath(p), os.path.realpath(p)}:
            out.append(variant)
    return sorted(set(out))


def bind_paths(config: SandboxConfig) -> list[tuple[str, bool]]:
    """The configured binds as (absolute path, writable), checked: each must be an
    existing directory and must not contain a hidden path (binding the checkout or the
    cache would undo the isolation)."""
    hidden = hidden_paths(config)
    out = []
    for path, writable in [*((p, False) for p in config.ro_binds),
                           *((p, True) for p in config.rw_binds)]:
        real = os.path.realpath(path)
        if not os.path.isdir(real):
            raise SandboxUnavailable(f"sandbox bind {path!r} is not a directory")
        inside = [h for h in hidden if _under(h, real)]
        if inside:
            raise SandboxUnavailable(f"sandbox bind {path!r} would expose the hidden path "
                                     f"{inside[0]!r}")
        out.append((real, writable))
    return out


def exposed_paths(config: SandboxConfig) -> list[str]:
    """Host paths bound read-only into the sandbox (outermost only)."""
    dirs = [d for d in _SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    dirs += list(_python_dirs(python_executable(config)))
    return _outermost(dirs)


@functools.cache
def _files_naming(dirs: tuple[str, ...], hidden: tuple[str, ...]) -> tuple[str, ...]:
    """Files in the exposed site-packages that name a hidden path: an editable
    install's `.pth` and finder module, `direct_url.json`. The sandbox sees them as
    empty files, so no host path is readable inside it."""
    found = []
    for top in dirs:
        if os.path.basename(top) not in ("site-packages", "dist-packages"):
            continue
        try:
            names = os.listdir(top)
        except OSError:
            continue
        candidates = [os.path.join(top, n) for n in names
                      if n.endswith(".pth") or n.startswith("__editable__")]
        candidates += [os.path.join(top, n, "direct_url.json") for n in names
                       if n.endswith(".dist-info")]
        for path in candidates:
            try:
                with open(path, "rb") as fh:
                    text = fh.read(1 << 20).decode("utf-8", "replace")
            except OSError:
                continue
            if any(h in text for h in hidden):
                found.append(path)
    return tuple(sorted(found))


def masked_files(config: SandboxConfig) -> list[str]:
    return list(_files_naming(_python_dirs(python_executable(config)),
                              tuple(hidden_paths(config))))


def _symlinked_system_dirs() -> list[tuple[str, str]]:
    return [(os.readlink(d), d) for d in _SYSTEM_DIRS if os.path.islink(d)]


@dataclass
class Layout:
    """The per-sandbox private directory on the host. `home` and `tmp` are the
    sandbox's only writable places. The sandbox's own stdout and stderr are pipes
    read by the host, never files here: the sandboxed process holds no descriptor
    to a host file."""

    root: Path
    home: Path
    tmp: Path
    uid: int | None
    gid: int | None
    #: Files were put in `home` from the host (one-shot runs): each is bound read-only
    #: into the sandbox's sized tmpfs home, so what the script writes never reaches the
    #: host disk either.
    prefilled: bool = False
    #: Host paths denied to `uid` by an ACL entry (rlimits-uid), undone by cleanup().
    sealed: tuple[str, ...] = ()
    #: Holds `uid` for this sandbox alone until cleanup().
    uid_lease: uids.UidLease | None = None

    def prefilled_entries(self) -> list[str]:
        return sorted(os.listdir(self.home)) if self.prefilled else []

    @classmethod
    def create(cls, level: str, config: SandboxConfig) -> Layout:
        bind_paths(config)  # a bad bind is refused before anything is changed on disk
        drop = _can_drop_privileges(level, config)
        if level == "rlimits-uid" and not drop:
            raise SandboxUnavailable("isolation level 'rlimits-uid' needs a root host (to "
                                     "run the sandbox as a uid of its own)")
        root = Path(tempfile.mkdtemp(prefix="discoverygym-sandbox-"))
        home, tmp = root / "home", root / "tmp"
        home.mkdir()
        tmp.mkdir()
        layout = cls(root, home, tmp, None, None)
        if drop:
            layout.uid_lease = _lease_uid()
            uid = gid = layout.uid = layout.gid = layout.uid_lease.uid
            os.chmod(root, 0o711)
            for d in (home, tmp):
                os.chown(d, uid, gid)
                os.chmod(d, 0o700)
            # Writable binds belong to this sandbox's uid (a restart gets a new uid and
            # takes over what the previous one wrote).
            # (Never through a link the agent made: fwalk without following.)
            for top in config.rw_binds:
                chown_tree(top, uid, gid)
        if level == "rlimits-uid":
            needed = _needed_paths(config)
            targets = seal.traverse_grants(needed)
            for path in seal.deny_targets(hidden_paths(config), needed):
                targets[path] = seal.DENY
            try:
                seal.seal(targets, layout.uid)
            except seal.SealFailed as exc:
                layout.cleanup()
                raise SandboxUnavailable(f"isolation level 'rlimits-uid': {exc}") from None
            layout.sealed = tuple(targets)
        return layout

    def cleanup(self) -> None:
        """Remove the private directory and lift the seal. Call once every process of
        the sandbox is gone (terminate())."""
        if self.sealed and self.uid is not None:
            seal.unseal(list(self.sealed), self.uid)
            self.sealed = ()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.uid_lease is not None:
            self.uid_lease.release()  # last: the uid's entries and files are gone


def _needed_paths(config: SandboxConfig) -> list[str]:
    """What a sandbox without namespaces must still reach inside a hidden tree: the
    interpreter's folders and the task's own folders."""
    out = list(_python_dirs(python_executable(config)))
    for path, _ in bind_paths(config):
        out += [path, os.path.abspath(path)]
    return out


def _can_drop_privileges(level: str, config: SandboxConfig) -> bool:
    """Root hosts run the sandbox under a uid of its own, at every level but
    rlimits-only (which is what a host that is not root gets). Namespaced levels lay
    out a filesystem the uid can traverse; rlimits-uid grants its uid the way to the
    interpreter where a folder on it is closed (seal.traverse_grants)."""
    return os.geteuid() == 0 and level != "rlimits-only"


def _lease_uid() -> uids.UidLease:
    """A uid no other sandbox of this machine holds and no live process runs as, so
    RLIMIT_NPROC counts this sandbox alone and a kill-by-uid reaches exactly its
    processes (sandbox/uids.py)."""
    try:
        return uids.lease_uid(in_use=lambda uid: bool(processes_of_uid(uid)))
    except (uids.NoUid, OSError) as exc:
        raise SandboxUnavailable(f"no uid of its own for the sandbox: {exc}") from None


def processes_of_uid(uid: int) -> list[int]:
    """Pids of live (not yet reaped) processes owned by `uid`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def kill_uid(uid: int, wait_s: float = 5.0) -> None:
    """SIGKILL every process running as `uid` (the sandbox's own uid), from a forked
    child that takes that uid: kill(-1) then reaches exactly those processes. Repeats
    until none is left (a fork in flight can escape one round) or `wait_s` passes."""
    deadline = time.monotonic() + wait_s
    while True:
        _kill_all_as(uid)
        if not processes_of_uid(uid) or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def _kill_all_as(uid: int) -> None:
    # `kill -KILL -1` run as the sandbox's uid reaches exactly that uid's processes
    # (itself included). subprocess switches the uid between fork and exec in C: no
    # Python runs in a forked copy of this multithreaded process.
    kill = shutil.which("kill") or "/bin/kill"
    for _ in range(2):
        try:
            subprocess.run([kill, "-KILL", "-1"], user=uid, group=uid, extra_groups=[],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                           close_fds=True)
        except (OSError, subprocess.SubprocessError):
            pass


def rlimits(config: SandboxConfig) -> dict[str, int]:
    return {
        "RLIMIT_AS": int(config.memory_mb) * 1024 * 1024,
        "RLIMIT_CPU": int(config.cpu_s),
        "RLIMIT_NPROC": int(config.max_processes),
        "RLIMIT_FSIZE": int(config.file_size_mb) * 1024 * 1024,
        "RLIMIT_CORE": 0,
    }


def child_env(config: SandboxConfig, home: str, tmp: str) -> dict[str, str]:
    """The sandbox's whole environment, from an allow-list: nothing of the host's
    (no API keys, no tokens) gets through."""
    bin_dir = os.path.dirname(os.path.abspath(python_executable(config)))
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{tmp}/matplotlib",
    }


def _launcher_argv(config: SandboxConfig, layout: Layout, cwd: str,
                   argv: list[str]) -> list[str]:
    spec = {"uid": layout.uid, "gid": layout.gid, "limits": rlimits(config), "cwd": cwd,
            "argv": argv}
    return [python_executable(config), "-I", "-c", _LAUNCH_SOURCE, json.dumps(spec)]


# bubblewrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that
# started the sandbox ends, not the process. Callers may create interpreters in
# short-lived worker threads (Inspect runs tools via anyio's thread pool, whose idle
# threads exit), so every sandbox is started from one thread that lives as long as
# the process.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                 thread_name_prefix="sandbox-spawner")


def spawn(cmd: list[str], **popen_kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen(cmd, **popen_kwargs)`, started from the long-lived spawner
    thread (see above)."""
    return _SPAWNER.submit(subprocess.Popen, cmd, **popen_kwargs).result()


def _bwrap_argv(config: SandboxConfig, layout: Layout, inner: list[str]) -> list[str]:
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
           "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        cmd.append("--unshare-user")
    exposed = exposed_paths(config)
    hidden = hidden_paths(config)
    # The private /tmp goes first: bwrap applies mounts in order, so binding /tmp after
    # the interpreter would hide a venv or checkout that lives under /tmp.
    size = str(int(config.writable_mb) * 1024 * 1024)
    cmd += ["--proc", "/proc", "--dev", "/dev",
            "--perms", "01777", "--size", size, "--tmpfs", "/tmp"]
    # bwrap creates missing parent directories as 0700; the sandbox's unprivileged uid
    # must be able to traverse them, so create them explicitly as 0755 first.
    binds = bind_paths(config)
    parents: list[str] = []
    for path in [*exposed, SANDBOX_HOME, *(b for b, _ in binds)]:
        for parent in reversed(Path(path).parents):
            name = str(parent)
            if name != "/" and name not in parents and not any(_under(name, e) for e in exposed):
                parents.append(name)
    for name in parents:
        cmd += ["--perms", "0755", "--dir", name]
    for path in exposed:
        cmd += ["--ro-bind", path, path]
    for target, link in _symlinked_system_dirs():
        cmd += ["--symlink", target, link]
    masked = [h for h in hidden if any(_under(h, e) for e in exposed) and os.path.exists(h)]
    for path in masked:  # a folder under an empty tmpfs, a file (a key file) as empty
        cmd += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    for path in exposed:  # re-expose what a mask covered (a venv inside a hidden tree)
        if any(_under(path, m) and path != m for m in masked):
            cmd += ["--ro-bind", path, path]
    for path in masked_files(config):
        cmd += ["--ro-bind", "/dev/null", path]
    for path, writable in binds:  # last, so no mask covers them
        cmd += ["--bind" if writable else "--ro-bind", path, path]
    # A sized tmpfs: writing past it fails with ENOSPC, nothing reaches the host disk.
    cmd += ["--perms", "0777", "--size", size, "--tmpfs", SANDBOX_HOME]
    for name in layout.prefilled_entries():
        cmd += ["--ro-bind", str(layout.home / name), f"{SANDBOX_HOME}/{name}"]
    cmd += ["--chdir", SANDBOX_HOME]
    # The options go through a file descriptor, not the command line: inside the
    # sandbox, /proc/1/cmdline would otherwise list every host path bound or masked.
    # (The command itself must stay on the command line; it names no host path but
    # the interpreter, which is bound at its own path.)
    args_file = layout.root / "bwrap.args"
    args_file.write_bytes(b"".join(a.encode() + b"\0" for a in cmd[1:]))
    return ["/bin/sh", "-c", 'exec bwrap --args 9 "$@" 9<"$0"', str(args_file), *inner]


def _unshare_argv(config: SandboxConfig, layout: Layout, inner: list[str]) -> list[str]:
    q = shlex.quote
    new_root = str(layout.root / "newroot")
    exposed = exposed_paths(config)
    hidden = hidden_paths(config)
    lines = ["set -e", f"R={q(new_root)}", 'mkdir -p "$R"', 'mount -t tmpfs -o mode=755 none "$R"']

    def bind_ro(path: str) -> None:
        lines.append(f'mkdir -p "$R"{q(path)}')
        lines.append(f'mount --rbind {q(path)} "$R"{q(path)}')
        lines.append(f'mount -o remount,bind,ro "$R"{q(path)} 2>/dev/null || true')

    # Private /tmp first (see _bwrap_argv): a venv under /tmp is bound on top of it.
    size = f"{int(config.writable_mb)}m"
    lines += ['mkdir -p "$R/tmp"', f'mount -t tmpfs -o size={size},mode=1777 none "$R/tmp"']
    for path in exposed:
        bind_ro(path)
    for target, link in _symlinked_system_dirs():
        lines.append(f'ln -s {q(target)} "$R"{q(link)}')
    masked = [h for h in hidden if any(_under(h, e) for e in exposed) and os.path.exists(h)]
    for path in masked:  # a folder under an empty tmpfs, a file (a key file) as empty
        if os.path.isdir(path):
            lines.append(f'mount -t tmpfs -o size=4k,mode=755 none "$R"{q(path)}')
        else:
            lines.append(f'mount --bind /dev/null "$R"{q(path)}')
    for path in exposed:
        if any(_under(path, m) and path != m for m in masked):
            bind_ro(path)
    for path in masked_files(config):
        lines.append(f'mount --bind /dev/null "$R"{q(path)}')
    for path, writable in bind_paths(config):
        if writable:
            lines += [f'mkdir -p "$R"{q(path)}', f'mount --rbind {q(path)} "$R"{q(path)}']
        else:
            bind_ro(path)
    lines += ['mkdir -p "$R/proc" "$R/dev" "$R/tmp" "$R"' + q(SANDBOX_HOME),
              'mount -t proc proc "$R/proc"']
    for dev in _DEVICES:
        lines += [f'touch "$R/dev/{dev}"', f'mount --bind /dev/{dev} "$R/dev/{dev}"']
    lines.append(f'mount -t tmpfs -o size={size},mode=777 none "$R"{q(SANDBOX_HOME)}')
    for name in layout.prefilled_entries():
        source, target = str(layout.home / name), f"{SANDBOX_HOME}/{name}"
        make = "mkdir -p" if os.path.isdir(source) else "touch"
        lines += [f'{make} "$R"{q(target)}', f'mount --rbind {q(source)} "$R"{q(target)}',
                  f'mount -o remount,bind,ro "$R"{q(target)} 2>/dev/null || true']
    lines += [f'exec {q(shutil.which("chroot") or "/usr/sbin/chroot")} "$R" ' + " ".join(q(a) for a in inner)]
    cmd = ["unshare", "--mount", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child",
           "--propagation", "private"]
    if os.geteuid() != 0:
        cmd += ["--user", "--map-root-user"]
    return cmd + ["sh", "-c", "\n".join(lines)]


def sandbox_command(level: str, config: SandboxConfig, layout: Layout,
                    argv: list[str]) -> tuple[list[str], str, dict[str, str]]:
    """The host command that runs `argv` (a Python command line) sandboxed at `level`.
    Returns (command, working directory as seen inside, environment)."""
    bind_paths(config)  # refuse a bad bind at every level, not only where it is mounted
    if level not in NAMESPACE_LEVELS and level in LEVELS:
        cwd, tmp = str(layout.home), str(layout.tmp)
        inner = _launcher_argv(config, layout, cwd, argv)
        return inner, cwd, child_env(config, cwd, tmp)
    inner = _launcher_argv(config, layout, SANDBOX_HOME, argv)
    env = child_env(config, SANDBOX_HOME, "/tmp")
    if level == "bubblewrap":
        return _bwrap_argv(config, layout, inner), SANDBOX_HOME, env
    if level == "unshare":
        return _unshare_argv(config, layout, inner), SANDBOX_HOME, env
    raise SandboxUnavailable(f"unknown isolation level {level!r}; levels: {', '.join(LEVELS)}")


@functools.cache
def _level_works(level: str, python: str) -> bool:
    if level == "rlimits-only":
        return True
    tool = {"bubblewrap": "bwrap", "unshare": "unshare"}.get(level)
    if tool is not None and shutil.which(tool) is None:
        return False
    config = SandboxConfig(python=python)
    try:
        layout = Layout.create(level, config)
    except (SandboxUnavailable, OSError):
        return False
    try:
        cmd, _, env = sandbox_command(level, config, layout, [python, "-I", "-c", "pass"])
        done = subprocess.run(cmd, env=env, capture_output=True, timeout=60,
                              start_new_session=True)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if layout.uid is not None:
            kill_uid(layout.uid)
        layout.cleanup()


def isolation_level(python: str | None = None) -> str:
    """The strongest isolation level that works on this host (probed once)."""
    python = os.path.abspath(python or sys.executable)
    for level in LEVELS:
        if _level_works(level, python):
            return level
    return "rlimits-only"  # pragma: no cover


_announced: set[str] = set()


_GET_NAMESPACES = ("Install bubblewrap (apt-get install bubblewrap) or allow user "
                   "namespaces.")


def weak_warning(level: str) -> str | None:
    """The warning that goes into records when isolation is weak, else None."""
    if level == "rlimits-uid":
        return (f"WEAK SANDBOX: isolation level '{level}' - agent code runs as a uid of its "
                "own that cannot read the caches, run directories or the package source, "
                "but it can read the host's other files and use the network. "
                + _GET_NAMESPACES)
    if level not in WEAK_LEVELS:
        return None
    return (f"WEAK SANDBOX: isolation level '{level}' - agent code can read the host's "
            "files (caches, run directories, the package source), use the network, and "
            "leave processes running. " + _GET_NAMESPACES)


#: Forces the level of every sandbox whose config names none (an operator's or a
#: test's knob; a task's minimum still applies).
LEVEL_ENV = "DISCOVERYGYM_SANDBOX_ISOLATION"


def _holds_key() -> bool:
    from ..core.keys import holds_key

    return holds_key()


def resolve_level(config: SandboxConfig) -> str:
    """The level to use for `config` (its own, else $DISCOVERYGYM_SANDBOX_ISOLATION,
    else the strongest that works), announced once per process on stderr. Raises
    SandboxUnavailable where that level does not work or is below the config's
    minimum."""
    python = python_executable(config)
    forced = config.isolation or os.environ.get(LEVEL_ENV) or None
    level = forced or isolation_level(python)
    if level not in LEVELS:
        raise SandboxUnavailable(f"unknown isolation level {level!r}; levels: {', '.join(LEVELS)}")
    if forced and not _level_works(level, python):
        raise SandboxUnavailable(f"isolation level {level!r} does not work on this host")
    if not meets(level, config.minimum_isolation):
        raise SandboxUnavailable(
            f"isolation level {level!r} is below this task's minimum "
            f"{config.minimum_isolation!r}: nothing was run", level)
    if level == "rlimits-only" and _holds_key():
        # the sandbox would be this process's own user, who can open the key file and
        # read this process's memory and environment: nothing can be sealed from it
        raise SandboxUnavailable(
            "isolation level 'rlimits-only' runs code as this process's own user, who "
            "can read the key this process holds; a keyed run needs 'rlimits-uid' or "
            "stronger (run as root, or install bubblewrap): nothing was run", level)
    if _first_notice(level):
        warning = weak_warning(level)
        # One plain line on stderr (records carry the warning too); not warnings.warn,
        # which printed this file's path and source line beside it.
        print(f"discoverygym sandbox: {warning or f'isolation level {level!r}'}",
              file=sys.stderr)
    return level


#: Set by `notices_once_per_command` in the command's process; its worker processes
#: inherit it, so that the level is announced once per command, not once per worker.
NOTICE_ENV = "DISCOVERYGYM_SANDBOX_NOTICE"
#: Set while a level is forced on purpose (the audit plays every level this host has):
#: its own table reports the levels, and the advice to install bubblewrap would be wrong.
QUIET_ENV = "DISCOVERYGYM_SANDBOX_QUIET"


def notices_once_per_command() -> None:
    """Make this process the one whose workers share its announcements (call once, in
    the command's process, before workers start; a process that inherits the setting
    keeps it)."""
    if os.environ.get(NOTICE_ENV):
        return
    stem = os.path.join(tempfile.gettempdir(),
                        f"discoverygym-notice-{os.getpid()}-{secrets.token_hex(6)}")
    os.environ[NOTICE_ENV] = stem
    atexit.register(_remove_notices, stem)


def _remove_notices(stem: str) -> None:
    for level in LEVELS:
        with contextlib.suppress(OSError):
            os.unlink(f"{stem}-{level}")


def _first_notice(level: str) -> bool:
    """Whether this process should announce `level`: the first time in this process,
    and, where the command shares its notices (NOTICE_ENV), the first time in the
    command (a marker file made with O_EXCL: one process wins)."""
    if level in _announced or os.environ.get(QUIET_ENV):
        return False
    _announced.add(level)
    stem = os.environ.get(NOTICE_ENV)
    if not stem:
        return True
    try:
        os.close(os.open(f"{stem}-{level}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:  # no temporary folder to write to: say it rather than stay silent
        return True
    return True


def terminate(proc: subprocess.Popen, layout: Layout) -> None:
    """Kill a sandboxed process and everything it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    if layout.uid is not None:
        kill_uid(layout.uid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass
