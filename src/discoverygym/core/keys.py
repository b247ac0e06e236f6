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

A key made by hand is checked before it is used (`parse_key`): one whose estimated
strength (`key_strength_bits`) is under 128 bits is refused, and so is a key file that
its group or other users could open (as ssh refuses such a private key). Every key file
this process reads is remembered (`key_files_read`), so the sandbox seals it from agent
code at every isolation level.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DiscoveryGymError

KEY_BYTES = 32
KEY_ENV = "DISCOVERYGYM_KEY"            # the key itself, hex
KEY_FILE_ENV = "DISCOVERYGYM_KEY_FILE"  # a path to a key file
_MAX_KEY_FILE = 4096
_ID_CHARS = 16
#: The least estimated strength a hand-made key may have.
MIN_KEY_BITS = 128
#: What a way of writing a key down must save before it counts as structure: random
#: bytes fit one of the shapes below by chance (three equal bytes among 16 save about
#: 13 bits), so each shape is charged this much for being chosen after the fact.
_CHANCE_BITS = 24


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

    def subkey(self, *parts: Any) -> Key:
        """A key of its own for one part of an evaluation (HMAC-SHA256 of the
        JSON-canonical `parts`, an HKDF-style expand): holding it reveals neither this key
        nor any other part's subkey."""
        message = json.dumps(["discoverygym-subkey", *parts], sort_keys=True, default=str,
                             separators=(",", ":")).encode()
        return Key(hmac.new(self.secret, message, hashlib.sha256).digest())

    def hex(self) -> str:
        return self.secret.hex()


def new_key() -> Key:
    return Key(secrets.token_bytes(KEY_BYTES))


def _cost_mostly_one_byte(secret: bytes) -> float:
    """Bits to write `secret` as one byte value repeated, with the other bytes placed
    (14 zero bytes and 2 random ones: about 31 bits)."""
    n = len(secret)
    most = max(secret.count(b) for b in set(secret))
    return 8 + math.log2(math.comb(n, most)) + 8 * (n - most)


def _cost_periodic(values: list[int], bits_per_value: float) -> float:
    """Bits to write `values` as a pattern of period p repeated, plus the positions and
    values of the entries that break it; the cheapest p (a random sequence: no p below
    its length pays off)."""
    n = len(values)
    best = bits_per_value * n
    for period in range(1, n // 2 + 1):
        breaks = sum(values[i] != values[i - period] for i in range(period, n))
        cost = (bits_per_value * (period + breaks) + math.log2(n)
                + math.log2(math.comb(n - period, breaks)))
        best = min(best, cost)
    return best


def _cost_small_alphabet(secret: bytes) -> float:
    """Bits to write `secret` as the set of byte values it uses, then each byte as one
    of them (a key of 0x00 and 0x01 bytes, or of a few letters)."""
    distinct = len(set(secret))
    return math.log2(math.comb(256, distinct)) + len(secret) * math.log2(max(distinct, 1))


def _cost_compressed(secret: bytes) -> float:
    """Bits of `secret` after DEFLATE (raw, no header): repeats at any distance."""
    return 8.0 * len(zlib.compress(secret, 9, wbits=-15))


def key_strength_bits(secret: bytes) -> float:
    """A conservative estimate of a key's strength in bits: the shortest of several
    ways to write it down (each an upper bound on what a guesser who tries that kind of
    key first must search): its plain length (8 bits a byte); one byte repeated with a
    few others placed; a repeated pattern (of the bytes, or of their differences, which
    catches counting sequences) with a few breaks; a small set of byte values; DEFLATE's
    output. Each shape is charged _CHANCE_BITS for being picked after seeing the key, so
    random keys keep their full 8 bits a byte: 16 or 32 random bytes (`key new` makes
    32) come out at 128 or 256; the shapes people make by hand (16 zero bytes, a
    repeated pattern, 14 zero bytes and 2 random ones, a counting sequence) come out
    far below 128."""
    if not secret:
        return 0.0
    differences = [(b - a) % 256 for a, b in zip(secret, secret[1:], strict=False)]
    shaped = min(_cost_mostly_one_byte(secret), _cost_periodic(list(secret), 8.0),
                 8 + _cost_periodic(differences, 8.0) if differences else 8.0,
                 _cost_small_alphabet(secret), _cost_compressed(secret))
    return min(8.0 * len(secret), shaped + _CHANCE_BITS)


def check_key_strength(key: Key) -> Key:
    """`key`, or BadKey (one line) when its estimated strength is under MIN_KEY_BITS."""
    bits = key_strength_bits(key.secret)
    if bits < MIN_KEY_BITS:
        raise BadKey(f"weak key: about {bits:.0f} bits of estimated strength (repeated or "
                     f"mostly equal bytes), at least {MIN_KEY_BITS} needed; make one with "
                     "`discoverygym key new`")
    return key


def parse_key(text: str) -> Key:
    """A key from its hex text, refused when it is weak (a hand-made key)."""
    text = text.strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        raise BadKey("a key is hex digits (as `discoverygym key new` writes it)") from None
    return check_key_strength(Key(secret))


#: Key files this process has read (as given and resolved): hidden from every sandbox.
_KEY_FILES: set[str] = set()
#: Keys handed to this process by its parent on a pipe (see core/key_handoff.py), by the
#: `--key-file` value that stands for them ("/dev/fd/N") or by "env" for the environment.
_HANDED: dict[str, Key] = {}


def key_files_read() -> tuple[str, ...]:
    """Every key file this process has read or was handed (paths to seal)."""
    return tuple(sorted(_KEY_FILES))


def holds_key() -> bool:
    """Whether this process holds a key: read from a file, handed by its parent, or named
    by its environment (which its own user can read in /proc)."""
    return bool(_KEY_FILES or _HANDED or os.environ.get(KEY_ENV)
                or os.environ.get(KEY_FILE_ENV))


def remember_key_file(path: str | os.PathLike[str]) -> None:
    for variant in {os.path.abspath(path), os.path.realpath(path)}:
        _KEY_FILES.add(variant)


@contextmanager
def keys_dropped_after() -> Iterator[None]:
    """Key files read and keys handed inside the block are forgotten when it ends (an
    audit family's own test keys): a process that holds a key runs no sandbox at
    rlimits-only, which would refuse whatever runs after the block."""
    files, handed = set(_KEY_FILES), set(_HANDED)
    try:
        yield
    finally:
        _KEY_FILES.intersection_update(files)
        for name in set(_HANDED) - handed:
            del _HANDED[name]


def read_key_file(path: str | os.PathLike[str]) -> Key:
    """A key from a file written by `write_key_file` (bounded read; one-line errors). A
    file its group or others may open is refused, as ssh refuses such a private key."""
    p = Path(path)
    if os.fspath(p) in _HANDED:
        return _HANDED[os.fspath(p)]
    try:
        with open(p, "rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if stat.S_ISREG(mode) and mode & 0o077:
                raise BadKey(f"key file {p} is open to its group or others (mode "
                             f"{stat.S_IMODE(mode):04o}): run `chmod 600 {p}`")
            raw = fh.read(_MAX_KEY_FILE + 1)
    except OSError as exc:
        raise BadKey(f"cannot read key file {p}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        remember_key_file(p)
    if len(raw) > _MAX_KEY_FILE:
        raise BadKey(f"key file {p} is too large to be a key")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise BadKey(f"key file {p} is not a key (hex text)") from None
    try:
        return parse_key(text)
    except BadKey as exc:
        raise BadKey(f"key file {p}: {exc}") from None


def write_key_file(path: str | os.PathLike[str], key: Key) -> None:
    """Write `key` to a new file only its owner can read; never overwrites."""
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key.hex() + "\n")


def key_from_environment(environ: dict[str, str] | None = None) -> Key | None:
    """The key named by DISCOVERYGYM_KEY or DISCOVERYGYM_KEY_FILE, or None."""
    env = os.environ if environ is None else environ
    if environ is None and "env" in _HANDED:
        return _HANDED["env"]
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
