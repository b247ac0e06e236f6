"""How the published real tasks' own truths score, next to our rebuilt truths.

For each published real-data task file in a directory: its truth (the file's planets and
jitter, `real_setup="published"`) scored on its data in v1 and v2, and our rebuilt truth
(`real_setup="rebuilt"`, the default) scored on the same data; the phase offset between
the two truths, planet by planet (Hungarian pairs of the published rule's distance), and
the published truth's v2 match against ours. The suite README's table is this output.

Usage: python -m discoverygym.suites.stargazer.published_truths DIR"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .importer import is_real_data, load_published, published_files
from .scoring import MAX_PAIR_DISTANCE, RMS_FACTOR, evaluate, fit_statistics


def _wrap(angle: float) -> float:
    """An angle in (-pi, pi]."""
    return float(math.pi - np.mod(math.pi - angle, 2.0 * math.pi))


def check_file(path: Path) -> dict[str, Any]:
    """Scores of the published and the rebuilt truth of one real-data task file."""
    published = load_published(path, real_setup="published")
    rebuilt = load_published(path, real_setup="rebuilt")
    pub_ctx = published.context()
    pub_stats = fit_statistics(pub_ctx, published.truth, published.truth_jitter_ms)
    pub_verdicts = evaluate(pub_ctx, published.truth, published.truth_jitter_ms)
    ours_verdicts = evaluate(rebuilt.context(), rebuilt.truth, rebuilt.truth_jitter_ms)
    # the published truth as a submission against ours: pairs and match
    cross = fit_statistics(rebuilt.context(), published.truth)
    cross_v2 = evaluate(rebuilt.context(), published.truth)["v2"]
    phase_offsets = [_wrap(published.truth[g, 4] - rebuilt.truth[t, 4])
                     for t, g in cross.pairs if cross.distances[t, g] <= MAX_PAIR_DISTANCE]
    return {
        "file": path.stem, "rebuilt_from": rebuilt.meta["rebuilt_from"],
        "n_points": int(published.times_days.size),
        "n_planets_published": int(published.truth.shape[0]),
        "n_planets_rebuilt": int(rebuilt.truth.shape[0]),
        "published_rms_ms": pub_stats.rms_ms,
        "v1_rms_limit_ms": RMS_FACTOR * pub_stats.median_sigma_ms,
        "published_delta_bic_per_point": pub_stats.delta_bic_per_point,
        "published_v1": pub_verdicts["v1"].to_dict(),
        "published_v2": pub_verdicts["v2"].to_dict(),
        "phase_offsets_rad": phase_offsets,
        "published_match_against_rebuilt_v2": cross_v2.match,
        "rebuilt_v1": ours_verdicts["v1"].to_dict(),
        "rebuilt_v2": ours_verdicts["v2"].to_dict(),
        "rebuilt_jitter_ms": rebuilt.truth_jitter_ms.tolist(),
    }


def check_directory(directory: str | Path) -> list[dict[str, Any]]:
    """`check_file` for every real-data task file in a directory (by file name)."""
    rows = []
    for path in published_files(directory).values():
        if is_real_data(json.loads(path.read_text())):
            rows.append(check_file(path))
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table."""
    def ok(verdict: dict[str, Any]) -> str:
        failed = [c for c, v in verdict["criteria"].items() if not v]
        return "pass" if verdict["passed"] else "fail (" + ", ".join(failed) + ")"

    lines = ["| file | planets (published / ours) | published truth: rms / v1 limit (m/s) "
             "| ΔBIC/n | v1 | phase offsets vs ours (rad) | match vs ours (v2) | our truth: v1 "
             "| our truth: v2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        offsets = ", ".join(f"{x:+.2f}" for x in r["phase_offsets_rad"]) or "none paired"
        lines.append(
            f"| {r['file']} | {r['n_planets_published']} / {r['n_planets_rebuilt']} "
            f"| {r['published_rms_ms']:.2f} / {r['v1_rms_limit_ms']:.2f} "
            f"| {r['published_delta_bic_per_point']:+.3f} | {ok(r['published_v1'])} "
            f"| {offsets} | {r['published_match_against_rebuilt_v2']:.2f} "
            f"| {ok(r['rebuilt_v1'])} | {ok(r['rebuilt_v2'])} |")
    n = len(rows)
    count = {key: sum(r[key]["passed"] for r in rows)
             for key in ("published_v1", "published_v2", "rebuilt_v1", "rebuilt_v2")}
    lines.append("")
    lines.append(f"Passed, of {n}: published truth v1 {count['published_v1']}, v2 "
                 f"{count['published_v2']}; our truth v1 {count['rebuilt_v1']}, v2 "
                 f"{count['rebuilt_v2']}.")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - prints the README table
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m discoverygym.suites.stargazer.published_truths DIR")
    print(markdown(check_directory(sys.argv[1])))
