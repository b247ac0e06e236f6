"""Host-side access to directories an agent can write to, without following any link.

An agent's code may turn any path under its output directory into a symbolic link to a
host file, or swap a directory for a link between a check and a use. Every function
here resolves a relative path beneath a directory file descriptor, one component at a
time with `O_NOFOLLOW` (or in one `openat2` call with `RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS` where the kernel has it), and checks the type of what it opened
with `fstat` on the open descriptor, so there is no window between check and use.
Links, FIFOs, devices and sockets are refused with `UnsafePath`; sizes, file counts and
depth are capped."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

MAX_DEPTH = 32


class UnsafePath(ValueError):
    """A path that would leave its directory, pass through a link, or reach something
    other than a regular file or directory; or a tree over its caps. The message is
    written for the agent."""


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def split_relative(rel: str) -> list[str]:
    """The components of a relative path; refuses absolute paths, '..', NUL and empty
    paths. '.' components and repeated slashes are dropped."""
    if "\x00" in rel:
        raise UnsafePath("paths may not contain NUL characters")
    rel = rel.strip()
    if rel.startswith("/"):
        rel = rel.lstrip("/")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise UnsafePath(f"{rel[:200]!r} points outside its directory ('..' is not "
                         "allowed)")
    if len(parts) > MAX_DEPTH:
        raise UnsafePath(f"{rel[:200]!r} is nested more than {MAX_DEPTH} levels deep")
    return parts


# ---- openat2, where the kernel has it --------------------------------------------------
_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437}.get(os.uname().machine)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


_libc = None
_openat2_works: bool | None = None


def _openat2(dir_fd: int, rel: str, flags: int, mode: int = 0) -> int:
    """openat2(dir_fd, rel, flags, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); raises OSError."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    how = _OpenHow(flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_SYS_OPENAT2, dir_fd, rel.encode(), ctypes.byref(how),
                       ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), rel)
    return fd


def openat2_available() -> bool:
    """Whether this kernel and libc offer openat2 (Linux 5.6+)."""
    global _openat2_works
    if _openat2_works is None:
        if _SYS_OPENAT2 is None:
            _openat2_works = False
        else:
            try:
                fd = _openat2(os.open("/", _DIR_FLAGS), ".", _DIR_FLAGS)
                os.close(fd)
                _openat2_works = True
            except (OSError, AttributeError):
                _openat2_works = False
    return _openat2_works


#: Tests set this False to exercise the component-by-component walk.
USE_OPENAT2 = True


def _walk_open(dir_fd: int, parts: list[str], flags: int, mode: int, *,
               make_parents: bool, owner: tuple[int, int] | None) -> int:
    """Open `parts` beneath `dir_fd` one component at a time, never following a link."""
    fd = os.dup(dir_fd)
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not make_parents:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                if owner is not None:
                    os.fchown(nxt, *owner)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=fd)
    finally:
        os.close(fd)


def open_beneath(dir_fd: int, rel: str, flags: int, mode: int = 0o644, *,
                 make_parents: bool = False, owner: tuple[int, int] | None = None) -> int:
    """A descriptor for `rel` beneath `dir_fd`, no link followed at any component.
    Raises UnsafePath for links and escapes, OSError (FileNotFoundError, ...) otherwise."""
    parts = split_relative(rel)
    if not parts:
        raise UnsafePath("give a file path, not the directory itself")
    try:
        if USE_OPENAT2 and not make_parents and openat2_available():
            # openat2 refuses a mode without O_CREAT (EINVAL).
            return _openat2(dir_fd, "/".join(parts), flags | os.O_NOFOLLOW,
                            mode if flags & os.O_CREAT else 0)
        return _walk_open(dir_fd, parts, flags, mode, make_parents=make_parents, owner=owner)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
            raise UnsafePath(f"{rel!r} passes through a symbolic link or a non-directory; "
                             "links are not followed") from None
        raise


def open_dir(path: str | os.PathLike[str]) -> int:
    """A descriptor for the directory `path` itself (its last component must not be a
    link; the path up to it is the host's own, not the agent's)."""
    return os.open(os.fspath(path), _DIR_FLAGS)


def read_beneath(root: str | os.PathLike[str], rel: str, max_bytes: int, *,
                 head: bool = False) -> bytes:
    """The bytes of the regular file `rel` beneath `root`, at most `max_bytes` (a larger
    file is refused, or with `head` its first `max_bytes` are returned). Links, FIFOs,
    devices and directories raise UnsafePath."""
    root_fd = open_dir(root)
    try:
        fd = open_beneath(root_fd, rel, _READ_FLAGS)
    finally:
        os.close(root_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{rel!r} is a {_kind(info.st_mode)}, not a regular file")
        if head:
            return os.read(fd, max_bytes)
        if info.st_size > max_bytes:
            raise UnsafePath(f"{rel!r} holds {info.st_size} bytes; at most {max_bytes} are read")
        return _read_all(fd, max_bytes, rel)
    finally:
        os.close(fd)


def _read_all(fd: int, max_bytes: int, rel: str) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:  # the file grew while we read it
            raise UnsafePath(f"{rel!r} holds more than {max_bytes} bytes")
        chunks.append(chunk)


def write_beneath(root: str | os.PathLike[str], rel: str, data: bytes) -> None:
    """Write `data` to `rel` beneath `root`, creating parent directories, replacing a
    regular file, never following a link. New files and folders take the owner of
    `root` (so a sandbox that owns its output folder can change what the host wrote)."""
    root_fd = open_dir(root)
    try:
        info = os.fstat(root_fd)
        owner = (info.st_uid, info.st_gid) if os.geteuid() == 0 else None
        fd = open_beneath(root_fd, rel, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                          0o644, make_parents=True, owner=owner)
    finally:
        os.close(root_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"{rel!r} is a {_kind(st.st_mode)}, not a regular file")
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if owner is not None:
            os.fchown(fd, *owner)
    finally:
        os.close(fd)


@dataclass
class Entry:
    """One thing found in a tree: its relative path, kind and size (regular files)."""

    path: str
    kind: str
    size: int = 0
    links: int = 1


@dataclass
class Caps:
    """Limits on a tree that is listed or copied."""

    max_files: int = 10_000
    max_total_bytes: int = 512 * 1024 * 1024
    max_file_bytes: int = 128 * 1024 * 1024
    max_depth: int = MAX_DEPTH


def walk_beneath(root: str | os.PathLike[str], caps: Caps | None = None,
                 sub: str = "") -> Iterator[Entry]:
    """Every entry beneath `root` (or its subdirectory `sub`), depth first, sorted, with
    its kind, never following a link; stops with UnsafePath past `caps.max_files`
    entries or `caps.max_depth` levels."""
    caps = caps or Caps()
    root_fd = open_dir(root)
    try:
        start = os.dup(root_fd) if not split_relative(sub) else open_beneath(
            root_fd, sub, _DIR_FLAGS)
    finally:
        os.close(root_fd)
    count = 0
    stack: list[tuple[int, str, int]] = [(start, "", 0)]
    try:
        while stack:
            fd, prefix, depth = stack.pop()
            try:
                names = sorted(os.listdir(fd))
                subdirs = []
                for name in names:
                    count += 1
                    if count > caps.max_files:
                        raise UnsafePath(f"the folder holds more than {caps.max_files} entries")
                    rel = f"{prefix}{name}"
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    kind = _kind(info.st_mode)
                    if kind == "directory":
                        if depth + 1 > caps.max_depth:
                            raise UnsafePath(f"{rel!r} is nested more than {caps.max_depth} "
                                             "levels deep")
                        subdirs.append(name)
                        yield Entry(rel, kind)
                    else:
                        yield Entry(rel, kind, info.st_size if kind == "file" else 0,
                                    info.st_nlink)
                for name in reversed(subdirs):
                    try:
                        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError:  # swapped for a link or removed meanwhile
                        yield Entry(f"{prefix}{name}", "symbolic link")
                        continue
                    stack.append((child, f"{prefix}{name}/", depth + 1))
            finally:
                os.close(fd)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


@dataclass
class Snapshot:
    """A private copy of the regular files of a tree, and what was refused."""

    root: Path
    files: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    total_bytes: int = 0


def snapshot_tree(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                  caps: Caps | None = None) -> Snapshot:
    """Copy the regular files beneath `src` into the new directory `dst`, never following
    a link, reading each file through a descriptor whose type was checked. Links,
    FIFOs, devices, sockets and files with more than one hard link are left out and
    listed in `refused`; a tree over `caps` raises UnsafePath (nothing is kept)."""
    caps = caps or Caps()
    dst = Path(dst)
    dst.mkdir(mode=0o700)
    snap = Snapshot(dst)
    src_fd = open_dir(src)
    try:
        for entry in walk_beneath(src, caps):
            if entry.kind == "directory":
                continue
            if entry.kind != "file":
                snap.refused.append((entry.path, f"a {entry.kind}"))
                continue
            if entry.links > 1:
                snap.refused.append((entry.path, "a hard link (more than one name)"))
                continue
            try:
                fd = open_beneath(src_fd, entry.path, _READ_FLAGS)
            except FileNotFoundError:  # removed meanwhile
                continue
            except (UnsafePath, OSError) as exc:
                snap.refused.append((entry.path, f"could not be opened as a regular file "
                                                 f"({exc})"))
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                    snap.refused.append((entry.path, f"a {_kind(info.st_mode)}"))
                    continue
                if info.st_size > caps.max_file_bytes:
                    raise UnsafePath(f"{entry.path!r} holds {info.st_size} bytes; a file may "
                                     f"hold at most {caps.max_file_bytes}")
                if snap.total_bytes + info.st_size > caps.max_total_bytes:
                    raise UnsafePath(f"the files hold more than {caps.max_total_bytes} "
                                     "bytes in all")
                target = dst / entry.path
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                # at most the size fstat gave: a file growing meanwhile is cut there
                snap.total_bytes += _copy_fd(fd, target, info.st_size)
            finally:
                os.close(fd)
            snap.files.append(entry.path)
    finally:
        os.close(src_fd)
    return snap


def _copy_fd(fd: int, target: Path, limit: int) -> int:
    """Copy at most `limit` bytes from `fd` into the new file `target`, in chunks."""
    copied = 0
    with open(target, "xb") as out:
        while copied < limit:
            chunk = os.read(fd, min(1 << 20, limit - copied))
            if not chunk:
                break
            out.write(chunk)
            copied += len(chunk)
    return copied


def chown_tree(root: str | os.PathLike[str], uid: int, gid: int) -> None:
    """Give `root` and everything beneath it to uid:gid without following links (links
    themselves are left alone)."""
    os.chown(root, uid, gid, follow_symlinks=False)
    for _top, dirs, files, top_fd in os.fwalk(root, follow_symlinks=False):
        for name in dirs + files:
            try:
                os.chown(name, uid, gid, dir_fd=top_fd, follow_symlinks=False)
            except OSError:
                pass
