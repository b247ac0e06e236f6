"""Hidden host paths made unreadable to one uid, for the level without namespaces.

Without a mount namespace the sandbox sees the host's files, so the cache, the package
source (a tpbench problem's reference is a YAML file in it) and the run directories are
there to read. On a root host the sandbox runs as a uid of its own; this module adds a
POSIX ACL entry that denies that uid everything ("user:UID:---") on each hidden path,
and removes it when the sandbox is gone. A named-user entry is checked before the
"other" class, so the sandbox's uid cannot list, traverse or read what lies beneath,
while every other user keeps exactly the access it had.

The ACL is written as the kernel's `system.posix_acl_access` extended attribute (no
`setfacl` needed). Changes are read-modify-write, so they are made under an exclusive
`flock` on a file in the cache (which no sandbox can reach): two sandboxes sealing the
same folder at once must not lose each other's entry.

Where a hidden tree holds something the sandbox needs (the venv inside the checkout),
the tree itself stays open and each of its entries is sealed instead, except the way
to what is needed. A process killed before it unseals leaves its entries behind; they
deny a uid no live sandbox has, which is harmless."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from collections.abc import Iterable
from pathlib import Path

ACL_XATTR = "system.posix_acl_access"
_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_UNDEFINED_ID = 0xFFFFFFFF
_ENTRY = struct.Struct("<HHI")
#: A hidden tree is opened up at most this deep to keep a needed path reachable.
_MAX_DEPTH = 12


class SealFailed(OSError):
    """A hidden path could not be made unreadable to the sandbox's uid."""


def _under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def deny_targets(hidden: Iterable[str], needed: Iterable[str]) -> list[str]:
    """The paths to deny so that nothing under `hidden` is reachable except `needed`
    (and the folders on the way to it). Links are never targets: a link's target is
    a hidden path of its own where it matters (hidden paths come as written and
    resolved)."""
    needed = sorted(set(needed))
    found: set[str] = set()

    def visit(path: str, depth: int) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            return
        inside = [n for n in needed if _under(n, path)]
        if not inside:
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                found.add(path)
            return
        if path in inside or not stat.S_ISDIR(st.st_mode) or depth >= _MAX_DEPTH:
            return  # the path itself is needed: it stays readable
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            visit(os.path.join(path, name), depth + 1)

    for path in hidden:
        visit(os.path.abspath(path), 0)
    out: list[str] = []
    for path in sorted(found, key=len):  # the outermost only
        if not any(_under(path, p) for p in out):
            out.append(path)
    return out


def _parse(raw: bytes) -> list[tuple[int, int, int]]:
    (version,) = struct.unpack_from("<I", raw)
    if version != _VERSION or (len(raw) - 4) % _ENTRY.size:
        raise SealFailed(errno.EINVAL, "unknown ACL format")
    return [_ENTRY.unpack_from(raw, 4 + i * _ENTRY.size)
            for i in range((len(raw) - 4) // _ENTRY.size)]


def _current_acl(path: str) -> list[tuple[int, int, int]]:
    try:
        return _parse(os.getxattr(path, ACL_XATTR, follow_symlinks=False))
    except OSError as exc:
        if exc.errno != errno.ENODATA:
            raise
    mode = os.lstat(path).st_mode  # no ACL yet: the one the mode bits stand for
    return [(_USER_OBJ, (mode >> 6) & 7, _UNDEFINED_ID),
            (_GROUP_OBJ, (mode >> 3) & 7, _UNDEFINED_ID), (_OTHER, mode & 7, _UNDEFINED_ID)]


def _write_acl(path: str, entries: list[tuple[int, int, int]]) -> None:
    named = [e for e in entries if e[0] in (_USER, _GROUP)]
    entries = [e for e in entries if e[0] != _MASK]
    group = next(p for t, p, _ in entries if t == _GROUP_OBJ)
    if not named:  # back to what the mode bits say: no ACL at all
        try:
            os.removexattr(path, ACL_XATTR, follow_symlinks=False)
        except OSError as exc:
            if exc.errno != errno.ENODATA:
                raise
        # With an ACL the mode's group bits showed the mask; give them back the group
        # owner's own bits.
        mode = os.lstat(path).st_mode
        os.chmod(path, (stat.S_IMODE(mode) & ~0o070) | (group << 3))
        return
    # The mask bounds the group class (the group owner's bits stay effective as they
    # were: a traverse grant widens only its own uid's access).
    mask = group
    for _, perm, _ in named:
        mask |= perm
    entries.append((_MASK, mask, _UNDEFINED_ID))
    entries.sort(key=lambda e: (e[0], e[2]))
    raw = struct.pack("<I", _VERSION) + b"".join(_ENTRY.pack(*e) for e in entries)
    os.setxattr(path, ACL_XATTR, raw, follow_symlinks=False)


#: Permission bits of the entries: nothing; traverse; list and traverse.
DENY, TRAVERSE, READ_TRAVERSE = 0, 1, 5


def _change(grants: dict[str, int | None], uid: int) -> None:
    """Give `uid` an entry of the given permission on each path (None: remove it)."""
    for path, perm in grants.items():
        entries = [e for e in _current_acl(path) if not (e[0] == _USER and e[2] == uid)]
        if perm is not None:
            entries.append((_USER, perm, uid))
        _write_acl(path, entries)


def traverse_grants(needed: Iterable[str]) -> dict[str, int]:
    """Entries that let a uid of its own reach `needed` (the interpreter's folders)
    where some folder on the way is closed to other users (a pyenv under a 0700 /root):
    traverse-only on the way, list and traverse on the needed folder itself. Nothing
    else of those folders opens: names must be known, and each file keeps its mode."""
    grants: dict[str, int] = {}
    for path in needed:
        real = Path(os.path.realpath(path))
        for folder, perm in [*((p, TRAVERSE) for p in real.parents), (real, READ_TRAVERSE)]:
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                continue
            if not stat.S_ISDIR(mode) or (mode & perm) == perm:
                continue
            grants[str(folder)] = max(grants.get(str(folder), 0), perm)
    return grants


def _lock_file() -> Path:
    from ..core import paths

    root = paths.cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return root / ".sandbox-seal.lock"


def _locked(grants: dict[str, int | None], uid: int) -> None:
    fd = os.open(_lock_file(), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _change(grants, uid)
    finally:
        os.close(fd)  # releases the lock


def seal(entries: dict[str, int], uid: int) -> None:
    """Give `uid` each entry (path -> DENY, TRAVERSE or READ_TRAVERSE); all or nothing
    (SealFailed)."""
    try:
        _locked(dict(entries), uid)
    except (OSError, StopIteration) as exc:
        unseal(list(entries), uid)
        raise SealFailed(errno.EPERM, f"could not seal the hidden paths: {exc}") from None


def unseal(paths: list[str], uid: int) -> None:
    """Remove `uid`'s entries from `paths` (best effort: a path may be gone)."""
    try:
        _locked(dict.fromkeys(paths), uid)
    except (OSError, StopIteration):
        for path in paths:  # one by one, so one bad path does not keep the others sealed
            try:
                _locked({path: None}, uid)
            except (OSError, StopIteration):
                pass


def denied(path: str, uid: int) -> bool:
    """Whether `path` carries a deny entry for `uid` (for tests and the audit)."""
    try:
        return any(t == _USER and i == uid and p == 0 for t, p, i in _current_acl(path))
    except OSError:
        return False
