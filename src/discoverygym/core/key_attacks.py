"""The audit's attacks on the keys themselves (keys.py), declared here beside them (see
core.audit_registry) and listed in audit.PLATFORM_ATTACK_MODULES:

- `keys`: hand-made weak keys (16 zero bytes, a repeated pattern, 14 zero bytes and 2
  random ones, a counting sequence), given as a key file and in DISCOVERYGYM_KEY; a
  strong key in a file its group or others may read (0644, 0640). Expected: each is
  refused in one line (a weak key names its estimated strength; an open file says
  `chmod 600 FILE`). Before, all were taken with no word, and a 16-bit key was
  recovered from a record's key id in 0.03 s.

Where the key travels (the key file sealed from the sandbox, its path off every command
line) is attacked from inside the sandbox: `key-file` in sandbox/attacks.py."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .audit_registry import AttackFamily, AuditTarget, Outcome, guard
from .keys import (
    KEY_ENV,
    BadKey,
    Key,
    key_from_environment,
    new_key,
    read_key_file,
)

FAMILY = "keys"
WEAK_KEYS = {
    "16 zero bytes": bytes(16),
    "a repeated 4-byte pattern": b"abcd" * 8,
    "14 zero bytes and 2 random ones": bytes(14) + bytes([0x8A, 0x13]),
    "a counting sequence": bytes(range(32)),
}
OPEN_MODES = (0o644, 0o640)


def _refused(load: Callable[[], Key], *, says: str) -> tuple[bool, str]:
    try:
        key = load()
    except BadKey as exc:
        text = str(exc)
        ok = says in text and "\n" not in text
        return ok, f"refused: {text[:160]}"
    return False, f"taken as {key.id}"


def key_attacks(target: AuditTarget, *,
                read: Callable[[Path], Key] = read_key_file) -> list[Outcome]:
    """Every weak key as a file and in the environment, and a strong key in open files.
    `read` is the file reader attacked (a test passes a weakened one)."""
    folder = Path(tempfile.mkdtemp(prefix="dg-audit-keys-"))
    outcomes: list[Outcome] = []
    try:
        for name, secret in WEAK_KEYS.items():
            path = folder / f"weak-{len(outcomes)}.key"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secret.hex() + "\n")
            outcomes.append(guard(FAMILY, f"a key file holding {name}",
                                  "refused in one line (weak key)",
                                  lambda path=path: _refused(lambda: read(path),
                                                             says="weak key")))
            outcomes.append(guard(
                FAMILY, f"{KEY_ENV} holding {name}", "refused in one line (weak key)",
                lambda secret=secret: _refused(
                    lambda: key_from_environment({KEY_ENV: secret.hex()}), says="weak key")))
        for mode in OPEN_MODES:
            path = folder / f"open-{mode:o}.key"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(new_key().hex() + "\n")
            os.chmod(path, mode)
            outcomes.append(guard(FAMILY, f"a strong key in a {mode:04o} file",
                                  "refused in one line (chmod 600)",
                                  lambda path=path: _refused(lambda: read(path),
                                                             says=f"chmod 600 {path}")))
        return outcomes
    finally:
        shutil.rmtree(folder, ignore_errors=True)


ATTACKS = (
    AttackFamily(FAMILY, "weak hand-made keys (file and environment) and key files open "
                 "to others", key_attacks),
)
