"""Unpacking an archive nobody vouches for: an agent's upload to the evaluation server,
or a record's data archive at build time. Regular files and folders only, nothing that
leaves the target, and the member count, bytes written and expansion ratio capped as
they are counted."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.safe_paths import UnsafePath, open_beneath, open_dir, split_relative


@dataclass(frozen=True)
class UnpackLimits:
    """What one upload may expand to."""

    max_members: int = 10_000
    max_total_bytes: int = 256 * 1024 * 1024
    max_ratio: float = 200.0  # uncompressed / upload size, over the whole archive


UNPACK_LIMITS = UnpackLimits()


class UploadRefused(ValueError):
    """An upload that breaks the rules; `status` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def unpack_archive(upload: Path, target: Path, limits: UnpackLimits = UNPACK_LIMITS) -> None:
    """Unpack a .tar.gz/.tar or .zip upload beneath `target`, streaming each member to
    disk: regular files and folders only, no member that leaves `target`, and the
    member count, the bytes written and the expansion ratio capped as they are
    counted (the sizes an archive declares are not trusted)."""
    budget = min(limits.max_total_bytes, int(limits.max_ratio * max(upload.stat().st_size, 1)))
    written = 0
    target_fd = open_dir(target)

    def copy(name: str, source: Any) -> None:
        nonlocal written
        try:
            split_relative(name)
            fd = open_beneath(target_fd, name, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                              | os.O_CLOEXEC, 0o600, make_parents=True)
        except (UnsafePath, FileExistsError) as exc:
            raise UploadRefused(f"archive member {name[:200]!r} refused: {exc}") from None
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(1 << 20):
                written += len(chunk)
                if written > budget:
                    raise UploadRefused(
                        f"the archive expands past {budget} bytes (at most "
                        f"{limits.max_total_bytes} bytes, and {limits.max_ratio:g} times the "
                        "upload)", 413)
                out.write(chunk)

    def count(n: int) -> None:
        if n > limits.max_members:
            raise UploadRefused(f"the archive holds more than {limits.max_members} members", 413)

    try:
        if zipfile.is_zipfile(upload):
            with zipfile.ZipFile(upload) as zf:
                infos = zf.infolist()
                count(len(infos))
                for info in infos:
                    kind = (info.external_attr >> 16) & 0o170000
                    if info.is_dir():
                        continue
                    if kind not in (0, 0o100000):  # a link or special file
                        raise UploadRefused(f"archive member {info.filename[:200]!r} is not "
                                            "a regular file")
                    with zf.open(info) as source:
                        copy(info.filename, source)
            return
        try:
            with tarfile.open(upload, mode="r:*") as tf:
                n = 0
                for member in tf:  # streamed: the member list is never held whole
                    n += 1
                    count(n)
                    if member.isdir():
                        continue
                    if not member.isfile():
                        raise UploadRefused(f"archive member {member.name[:200]!r} is not a "
                                            "regular file")
                    source = tf.extractfile(member)
                    copy(member.name, source if source is not None else io.BytesIO())
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise UploadRefused(f"not a .tar.gz, .tar or .zip archive ({exc})") from None
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise UploadRefused(f"a damaged archive ({exc})") from None
    finally:
        os.close(target_fd)
