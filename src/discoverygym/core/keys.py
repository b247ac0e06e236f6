"""Secret keys for held-out draws (commit, then reveal).

Every number of an episode is fixed by (suite, task, seed, options) and the code is
public, so anyone holding the package can rebuild an unkeyed episode and read its truth.
A key closes that: with a key, the draws come from HMAC-SHA256(key, public identity), so
nobody without the key can rebuild them. The scorer publishes the key's commitment
before an evaluation and reveals the key after it; anyone can then check the commitment
and replay every record.

- `Key.id` is short and goes into records; `Key.commitment` is published; the secret
  never leaves this object (its repr hides it).
- `Key.derive(*parts)` turns a public identity into a draw seed (a 128-bit integer that
  numpy's `default_rng` takes like any seed).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DiscoveryGymError

KEY_BYTES = 32
KEY_ENV = "DISCOVERYGYM_KEY"            # the key itself, hex
KEY_FILE_ENV = "DISCOVERYGYM_KEY_FILE"  # a path to a key file
_MAX_KEY_FILE = 4096
_ID_CHARS = 16


class BadKey(DiscoveryGymError, ValueError):
    """A key file or value that cannot be used (one line, for the user)."""


@dataclass(frozen=True)
class Key:
    secret: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.secret, bytes) or len(self.secret) < 16:
            raise BadKey("a key must be at least 16 bytes")

    @property
    def commitment(self) -> str:
        """What is published before the evaluation: SHA-256 of the key, hex."""
        return hashlib.sha256(b"discoverygym-key-commitment\0" + self.secret).hexdigest()

    @property
    def id(self) -> str:
        """A short name for the key, safe to write into every record."""
        return "key-" + self.commitment[:_ID_CHARS]

    def derive(self, *parts: Any) -> int:
        """A 128-bit draw seed for this public identity (JSON-canonical `parts`)."""
        message = json.dumps(list(parts), sort_keys=True, default=str,
                             separators=(",", ":")).encode()
        digest = hmac.new(self.secret, message, hashlib.sha256).digest()
        return int.from_bytes(digest[:16], "big")

    def hex(self) -> str:
        return self.secret.hex()


def new_key() -> Key:
    return Key(secrets.token_bytes(KEY_BYTES))


def parse_key(text: str) -> Key:
    text = text.strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        raise BadKey("a key is hex digits (as `discoverygym key new` writes it)") from None
    return Key(secret)


def read_key_file(path: str | os.PathLike[str]) -> Key:
    """A key from a file written by `write_key_file` (bounded read; one-line errors)."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(_MAX_KEY_FILE + 1)
    except OSError as exc:
        raise BadKey(f"cannot read key file {p}: {exc.strerror or exc}") from None
    if len(raw) > _MAX_KEY_FILE:
        raise BadKey(f"key file {p} is too large to be a key")
    try:
        return parse_key(raw.decode("ascii"))
    except UnicodeDecodeError:
        raise BadKey(f"key file {p} is not a key (hex text)") from None


def write_key_file(path: str | os.PathLike[str], key: Key) -> None:
    """Write `key` to a new file only its owner can read; never overwrites."""
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")


def key_from_environment(environ: dict[str, str] | None = None) -> Key | None:
    """The key named by DISCOVERYGYM_KEY or DISCOVERYGYM_KEY_FILE, or None."""
    env = os.environ if environ is None else environ
    if env.get(KEY_ENV):
        return parse_key(env[KEY_ENV])
    if env.get(KEY_FILE_ENV):
        return read_key_file(env[KEY_FILE_ENV])
    return None


def resolve_key(key_file: str | os.PathLike[str] | None) -> Key | None:
    """`--key-file` if given, else the environment, else None (public draws)."""
    if key_file:
        return read_key_file(key_file)
    return key_from_environment()
