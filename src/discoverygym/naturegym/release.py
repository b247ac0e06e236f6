"""`discoverygym package verify-release DIR --key-file K`: after the evaluation window,
regenerate every package of a release from its revealed key and compare it byte for
byte with what was evaluated.

The check, in order: the manifest is readable; a public-seed release is checked
without a key (a key given for one is refused); the key matches the commitment given
with --commitment and the manifest's; the manifest's count and indices agree with its
list, and the folder holds exactly the listed package folders; every package folder
holds exactly the files (and no other folder) the generator writes, with the same
bytes (its digest), and the manifest's digests agree. The first difference is
reported in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core.keys import Key
from .families import get_family
from .generate import (
    MANIFEST,
    MANIFEST_SCHEMA,
    GenerationError,
    build_package,
    files_digest,
    public_key,
)

MAX_MANIFEST_BYTES = 4_000_000
MAX_PACKAGE_FILES = 10_000


class ReleaseMismatch(ValueError):
    """The release is not what its key regenerates (one line, for the user)."""


def read_manifest(directory: Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    if path.is_symlink() or not path.is_file():
        raise ReleaseMismatch(f"{path}: no release manifest")
    with open(path, "rb") as fh:
        raw = fh.read(MAX_MANIFEST_BYTES + 1)
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ReleaseMismatch(f"{path}: too large to be a release manifest")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise ReleaseMismatch(f"{path}: not valid JSON") from None
    if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
        raise ReleaseMismatch(f"{path}: not a {MANIFEST_SCHEMA} manifest")
    packages = data.get("packages")
    if not isinstance(packages, list) or not all(
            isinstance(p, dict) and isinstance(p.get("id"), str)
            and isinstance(p.get("index"), int) and isinstance(p.get("digest"), str)
            for p in packages):
        raise ReleaseMismatch(f"{path}: the package list is malformed")
    return data


def _refuse_empty(dirpath: str, dirnames: list[str], filenames: list[str]) -> None:
    """The generator writes no empty folder, so the files' digest cannot see one."""
    if not dirnames and not filenames:
        raise ReleaseMismatch(f"{dirpath}: an empty folder the generator never writes")


def _read_package(root: Path) -> dict[str, bytes]:
    """Every regular file under a package folder; links and special files are refused,
    and so is a folder that the generator's files do not account for (an empty one)."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not (path.is_dir() or path.is_file()):
                raise ReleaseMismatch(f"{path}: a link or special file in the release")
        _refuse_empty(dirpath, dirnames, filenames)
        for name in filenames:
            path = Path(dirpath) / name
            files[str(path.relative_to(root))] = path.read_bytes()
            if len(files) > MAX_PACKAGE_FILES:
                raise ReleaseMismatch(f"{root}: more than {MAX_PACKAGE_FILES} files")
    return files


def _check_listing(directory: Path, data: dict[str, Any]) -> None:
    """The manifest's count, indices and ids agree with each other and with the folder:
    exactly the listed package folders and the manifest, nothing missing, nothing more
    (a package removed from both folder and manifest changes the count; an added
    folder or file is named)."""
    packages = data["packages"]
    count, start = data.get("count"), data.get("start")
    if not isinstance(count, int) or isinstance(count, bool) or count != len(packages):
        raise ReleaseMismatch(f"the manifest's count ({count!r}) is not the number of "
                              f"packages it lists ({len(packages)})")
    if not isinstance(start, int) or isinstance(start, bool) or sorted(
            p["index"] for p in packages) != list(range(start, start + count)):
        raise ReleaseMismatch(f"the manifest's package indices are not {start!r} to "
                              f"{start!r} + {count} - 1, each once")
    listed = [p["id"] for p in packages]
    if len(set(listed)) != len(listed) or any(
            not i or i in (".", "..") or "/" in i or i == MANIFEST for i in listed):
        raise ReleaseMismatch("the manifest lists a package id twice or one that is "
                              "not a folder name")
    present = {p.name: p for p in directory.iterdir() if p.name != MANIFEST}
    for name in sorted(set(present) - set(listed)):
        kind = "folder" if present[name].is_dir() else "file"
        raise ReleaseMismatch(f"{name}: a {kind} in the release that its manifest does not "
                              "list")
    for name in listed:
        if name not in present:
            raise ReleaseMismatch(f"{name}: listed in the manifest, missing from the folder")
        if present[name].is_symlink() or not present[name].is_dir():
            raise ReleaseMismatch(f"{name}: not a folder (a link or a file)")


def _checked_key(data: dict[str, Any], key: Key | None, commitment: str | None) -> Key:
    """The key to regenerate with: a public release's (and then no key or commitment may
    be given: none made it), else the given key, which must match the commitment given
    and the manifest's."""
    if data.get("mode") == "public":
        if key is not None or commitment is not None:
            raise ReleaseMismatch("a public-seed release: anyone can rebuild it from its "
                                  "seed and no key made it; check it without --key-file "
                                  "or --commitment")
        seed = data.get("seed")
        if not isinstance(seed, int):
            raise ReleaseMismatch("the public release's manifest has no integer seed")
        key = public_key(seed)
    elif data.get("mode") != "keyed":
        raise ReleaseMismatch(f"the manifest's mode {str(data.get('mode'))[:40]!r} is "
                              "neither keyed nor public")
    elif key is None:
        raise ReleaseMismatch("a keyed release needs its key: --key-file K")
    if commitment is not None and commitment.strip().lower() != key.commitment:
        raise ReleaseMismatch("the key does not match the commitment given "
                              "(--commitment)")
    if key.commitment != data.get("key_commitment"):
        raise ReleaseMismatch("the key does not match the release's published commitment")
    return key


def verify_release(directory: Path, key: Key | None,
                   commitment: str | None = None) -> dict[str, Any]:
    """Regenerate every package of the release in `directory` and compare; returns the
    manifest when everything matches, else raises ReleaseMismatch (one line). A public
    release (`--seed` mode) needs no key, and a key or commitment given for one is
    refused (no key made it). `commitment`, the one published before the release was
    evaluated, must be the key's and the manifest's."""
    directory = Path(directory)
    data = read_manifest(directory)
    key = _checked_key(data, key, commitment)
    try:
        family = get_family(str(data.get("family")))
    except ValueError as exc:
        raise ReleaseMismatch(str(exc)) from None
    if data.get("family_version") != family.version:
        raise ReleaseMismatch(f"the release was made by {family.name} version "
                              f"{data.get('family_version')}, this is version "
                              f"{family.version}")
    _check_listing(directory, data)
    # the folders first (links, special files, empty folders): what needs no
    # regeneration is refused before the minutes that regeneration takes
    found_all = {entry["id"]: _read_package(directory / entry["id"])
                 for entry in data["packages"]}
    for entry in data["packages"]:
        try:
            expected = build_package(family, key, entry["index"], mode=str(data["mode"]),
                                     seed=data.get("seed"))
        except GenerationError as exc:
            raise ReleaseMismatch(str(exc)) from None
        if expected.id != entry["id"]:
            raise ReleaseMismatch(f"package {entry['index']}: id {entry['id']} is not what "
                                  "the key gives")
        if expected.digest != entry["digest"]:
            raise ReleaseMismatch(f"{entry['id']}: the manifest's digest differs from the "
                                  "regenerated package")
        found = found_all[entry["id"]]
        for path in sorted(set(found) | set(expected.files)):
            if found.get(path) != expected.files.get(path):
                what = "missing" if path not in found else (
                    "not generated" if path not in expected.files else "differs")
                raise ReleaseMismatch(f"{entry['id']}/{path}: {what}")
        assert files_digest(found) == expected.digest
    return data
