"""RUN/verified.json: the note `discoverygym verify` leaves beside a run, and how the
leaderboard and the report read it.

The note is a convenience, not a proof: anyone can write a file. It holds the SHA-256
of records.jsonl and run.json as they were verified, so a record or plan edited since
reads as "stale", never "verified"; the proof is running `verify` again with the key."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

VERIFIED_FILE = "verified.json"
_MAX_NOTE_BYTES = 1_000_000
# What a note may name; anything else in the file is shown as nothing.
_PATTERNS = {"commitment": re.compile(r"[0-9a-f]{64}"),
             "plan_digest": re.compile(r"[0-9a-f]{64}"),
             "key_id": re.compile(r"key-[0-9a-f]{16}")}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verification_of(run: Path) -> dict[str, Any]:
    """What RUN/verified.json says, checked against the files it was made on:
    {"status": "verified" | "rejected" | "stale" | "unverified", "commitment", "key_id",
    "plan_digest"} (None where the note names none, or names it malformed)."""
    run = Path(run)
    out: dict[str, Any] = {"status": "unverified", "commitment": None, "key_id": None,
                           "plan_digest": None}
    path = run / VERIFIED_FILE
    if not path.is_file():
        return out
    try:
        with path.open("rb") as fh:
            note = json.loads(fh.read(_MAX_NOTE_BYTES + 1).decode("utf-8"))
        if not isinstance(note, dict):
            return out
        fresh = (note.get("records_sha256") == sha256_file(run / "records.jsonl")
                 and note.get("run_json_sha256") == sha256_file(run / "run.json"))
    except (OSError, ValueError, RecursionError):
        return out
    verdict = note.get("verdict")
    out["status"] = ("stale" if not fresh else verdict if verdict in ("verified", "rejected")
                     else "unverified")
    for name, pattern in _PATTERNS.items():
        value = note.get(name)
        out[name] = value if isinstance(value, str) and pattern.fullmatch(value) else None
    return out


def verification_cell(runs: list[Path],
                      notes_by_run: dict[Path, dict[str, Any]] | None = None) -> tuple[str, str]:
    """(verified, commitment) for a leaderboard group made of the records of `runs`:
    "yes" when every run is verified (with the commitment's first 12 hex digits, or
    "public" for public draws), "k of n runs" when some are, else the one status they
    share; the full commitments, space separated. `notes_by_run` caches each run's note
    across the groups of one leaderboard (a run is hashed once)."""
    cache = {} if notes_by_run is None else notes_by_run
    notes = [cache[run] if run in cache else cache.setdefault(run, verification_of(run))
             for run in runs]
    verified = [n for n in notes if n["status"] == "verified"]
    commitments = sorted({n["commitment"] or "public" for n in verified})
    if notes and len(verified) == len(notes):
        short = ", ".join(c if c == "public" else c[:12] for c in commitments)
        return f"yes ({short})", " ".join(commitments)
    if verified:
        return f"{len(verified)} of {len(notes)} runs", " ".join(commitments)
    statuses = sorted({n["status"] for n in notes})
    return ("no" if statuses in (["unverified"], []) else ", ".join(statuses)), ""
