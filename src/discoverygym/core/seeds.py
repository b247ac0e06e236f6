"""Seed ranges as people type them ('0-9', '3', '0,2,5', '0-4,10-12'): the calibration
seeds, and a suite's own ranges (gravity's procedural `--world-seeds`)."""

from __future__ import annotations

MAX_SEEDS = 10_000


def parse_seeds(text: str) -> list[int]:
    """Seeds from '0-9', '3', '0,2,5' or '0-4,10-12' (sorted, without repeats)."""
    seeds: set[int] = set()
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise ValueError(f"Bad seed range {part[:40]!r}: use e.g. '0-9', '3' or "
                             "'0,2,5'.") from None
        if first < 0 or last < first:
            raise ValueError(f"Bad seed range {part[:40]!r}: seeds are >= 0, low-high.")
        # bounded before the range is built: '0-10**12' must not fill the memory
        if last - first >= MAX_SEEDS or len(seeds) + (last - first + 1) > 2 * MAX_SEEDS:
            raise ValueError(f"At most {MAX_SEEDS} seeds.")
        seeds.update(range(first, last + 1))
        if len(seeds) > MAX_SEEDS:
            raise ValueError(f"At most {MAX_SEEDS} seeds.")
    if not seeds:
        raise ValueError("No seeds given: use e.g. --seeds 0-9.")
    return sorted(seeds)
