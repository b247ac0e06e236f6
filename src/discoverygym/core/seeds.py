"""The one reading of `--seeds`: a seed (`3`), an inclusive range (`0-9`), or a comma
list of either (`0,2,5`, `0-4,10-12`). Seeds are integers >= 0; the result is sorted
and without repeats."""

from __future__ import annotations

MAX_SEEDS = 10_000
ACCEPTED = "a seed (3), a range (0-9) or a comma list of them (0,2,5 or 0-4,10-12)"


def parse_seeds(text: str) -> list[int]:
    seeds: set[int] = set()
    text = str(text)
    if len(text) > 1000:
        raise ValueError(f"--seeds is too long: give {ACCEPTED}")
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise ValueError(f"bad --seeds {part[:40]!r}: give {ACCEPTED}") from None
        if first < 0 or last < first:
            raise ValueError(f"bad --seeds {part[:40]!r}: seeds are >= 0 and a range runs low-high "
                             f"(give {ACCEPTED})")
        if last - first + 1 + len(seeds) > MAX_SEEDS:
            raise ValueError(f"at most {MAX_SEEDS} seeds")
        seeds.update(range(first, last + 1))
    if not seeds:
        raise ValueError(f"no seeds given: give {ACCEPTED}")
    return sorted(seeds)
