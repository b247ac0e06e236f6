"""Golden records: a fixed sample of every suite, played by scripted baselines on
fixed seeds, whose records must not change when the code is reorganised.

    python tools/golden_records.py            # write tests/data/golden_records.json
    python tools/golden_records.py --check    # play the sample, compare, exit 1 on a change

It plays in its own process with one BLAS thread and an empty cache (see
`_fresh_process_settings`), so the records do not depend on the machine's cores or on
what an earlier run left in the cache.

tests/project/test_golden_records.py plays the same sample and compares it with the committed
file. Regenerate the file only for a change of behaviour that is meant, and say in the
commit which records changed and why.

What is kept of a record: everything but what depends on the run rather than on
(agent, suite, task, seed, options): wall-clock seconds, the package version, and the
paths and timings a suite writes into `details`. A digest of the prompt and of the
agent's workspace at the end (`seen_by_agent`) stands for the data it was shown, which
a record does not hold. mad runs with `protocol=paper` only, its default protocol
being under redesign, and with short horizons so the sample stays fast."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GOLDEN_PATH = Path(__file__).resolve().parent.parent / "tests" / "data" / "golden_records.json"
#: The numerical machine the golden file was written on (see `numerical_machine`).
MACHINE_PATH = GOLDEN_PATH.with_name("golden_machine.json")

_GRAVITY = {"protocol": "budget-obs-100", "setup": "leak-free"}

# (agent, suite, task_id, seed, options). Each suite: its honest baselines on a few
# tasks that exercise different physics, and a trivial agent.
SAMPLE: list[tuple[str, str, str, int, dict[str, Any]]] = [
    ("expert-adaptive", "gravity", "period", 0, {"world": "A", **_GRAVITY}),
    ("expert-adaptive", "gravity", "eccentricity", 3, {"world": "B", **_GRAVITY}),
    ("expert-adaptive", "gravity", "linear_drag", 0, {"world": "DRAG1", **_GRAVITY}),
    ("expert-adaptive", "gravity", "total_energy", 1, {"world": "UNB", **_GRAVITY}),
    ("expert-adaptive", "gravity", "modified_gravity_power_law", 0,
     {"world": "MG197", **_GRAVITY}),
    ("expert-uniform", "gravity", "semi_major_axis", 2, {"world": "C", **_GRAVITY}),
    ("expert-full", "gravity", "apoastron", 0,
     {"world": "PM1", "protocol": "full-obs", "setup": "leak-free"}),
    ("constant", "gravity", "period", 0, {"world": "A", **_GRAVITY}),
    ("classical", "stargazer", "easy-000", 0, {"mode": "v2"}),
    ("classical", "stargazer", "medium-001", 0, {"mode": "v1"}),
    ("no-planet", "stargazer", "easy-001", 0, {}),
    ("reference", "tpbench", "atwood-disk-pulley", 0, {}),
    ("wrong-sign", "tpbench", "annulus-axis-field", 0, {}),
    ("constant", "tpbench", "apsidal-angle-perturbed-kepler", 0, {}),
    ("baseline", "packages", "gravity-force-law", 0, {}),
    ("oracle", "packages", "rv-holdout-forecast", 0, {}),
    ("baseline", "packages", "binary-drag-timescale", 0, {}),
    ("constant", "packages", "gravity-force-law", 0, {}),
    ("newtonian", "mad", "classical-normal", 0,
     {"protocol": "paper", "t_max": 4.0, "query_horizon": 1.0}),
    ("ballistic", "mad", "classical-kappa10", 1,
     {"protocol": "paper", "t_max": 2.0, "query_horizon": 1.0}),
    ("persistence", "mad", "fluid-normal", 0,
     {"protocol": "paper", "resolution": 32, "t_max": 1.0, "query_horizon": 0.5}),
    ("schrodinger", "mad", "quantum-normal", 0,
     {"protocol": "paper", "t_max": 2.0, "query_horizon": 1.0}),
]

# Keys whose value depends on the run (clock, machine, install), not on the episode.
# `isolation` is the sandbox level the machine allows (bubblewrap, unshare, ...).
RUN_DEPENDENT_KEYS = frozenset({"wall_s", "version", "agent_traceback", "isolation"})


def _strip(value: Any) -> Any:
    """The value without run-dependent keys, at every depth: those named in
    RUN_DEPENDENT_KEYS and those whose name says they hold seconds measured or a path
    (today: usage.wall_s, version, and tpbench's verification.duration_s and
    isolation), and the spent of a budget a clock runs down (packages' solve_s)."""
    if isinstance(value, dict):
        # a budget run down by a clock (usage.budget's solve_s): its spent is seconds
        clock = str(value.get("kind", "")).endswith("_s") and "spent" in value
        return {k: _strip(v) for k, v in value.items()
                if k not in RUN_DEPENDENT_KEYS and not k.endswith(_RUN_DEPENDENT_SUFFIXES)
                and not (clock and k == "spent")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


_RUN_DEPENDENT_SUFFIXES = ("_seconds", "elapsed_s", "duration_s", "_path", "_dir")


def play(agent: str, suite: str, task_id: str, seed: int, options: dict[str, Any]) -> dict:
    """The record of one episode of the sample, as JSON data without run-dependent keys,
    with `seen_by_agent`: a digest of the prompt and of the workspace when the agent
    finished (the data it was given and measured, which the record does not hold)."""
    from discoverygym.core import EpisodeSpec
    from discoverygym.run.episode_worker import play_built

    episode = EpisodeSpec(suite, task_id, seed, dict(options)).build()
    record = play_built(episode, suite, agent)
    # Through JSON, as a run writes it, so the file compares like for like.
    out = _strip(json.loads(record.to_json()))
    view = episode.view()
    out["seen_by_agent"] = _digest([view.prompt, view.workspace()])
    return out


# Workspace entries that name a temporary folder or a clock reading (packages).
_WORKSPACE_RUN_DEPENDENT = ("DATA_DIR", "OUTPUT_DIR", "time_remaining_s")


def _digest(value: Any) -> str:
    """sha256 of a canonical byte form of prompts, dicts, lists, numpy arrays, pandas
    frames and scalars: equal exactly when every number is equal to the bit."""
    import hashlib

    digest = hashlib.sha256()
    _feed(value, digest.update)
    return digest.hexdigest()


def _feed(value: Any, update: Any) -> None:
    import numpy as np
    import pandas as pd

    if isinstance(value, dict):
        update(b"{")
        for key in sorted(value, key=str):
            if key not in _WORKSPACE_RUN_DEPENDENT:
                update(repr(key).encode())
                _feed(value[key], update)
        update(b"}")
    elif isinstance(value, list | tuple):
        update(b"[")
        for item in value:
            _feed(item, update)
        update(b"]")
    elif isinstance(value, pd.DataFrame):
        _feed({"columns": [str(c) for c in value.columns],
               **{str(c): value[c].to_numpy() for c in value.columns}}, update)
    elif isinstance(value, np.ndarray):
        update(f"{value.dtype}{value.shape}".encode())
        update(value.tobytes() if value.dtype != object else repr(value.tolist()).encode())
    elif isinstance(value, float):
        update(value.hex().encode())
    elif value is None or isinstance(value, str | int | bool | np.generic):
        update(repr(value).encode())
    else:
        raise TypeError(f"no canonical form for {type(value).__name__} in a workspace")


def play_sample() -> list[dict]:
    """Every record of the sample, in SAMPLE order; {"unavailable": reason} for a suite
    whose extra is not installed. Run it in a fresh process (`main` does), so that the
    thread pin and the empty cache apply."""
    from discoverygym.core import available_suites

    suites = available_suites()
    return [{"unavailable": str(suites[entry[1]])} if isinstance(suites[entry[1]], Exception)
            else play(*entry) for entry in SAMPLE]


def numerical_machine() -> dict[str, Any]:
    """What fixes the last bits of a float beside our code: the numerical libraries'
    versions, the SIMD level numpy dispatches its kernels to (AVX-512 machines run other
    exp/log/sin kernels than AVX2 ones) and the BLAS kernel family. Records are equal bit
    for bit between machines that agree on all of it; between others the last digits
    of simulated data may differ (seen: 1e-12 relative, AVX-512 against AVX2)."""
    import numpy as np
    import scipy

    try:
        import rebound
        rebound_version = rebound.__version__
    except ImportError:
        rebound_version = None
    simd = np.lib.introspect.opt_func_info() if hasattr(np.lib, "introspect") else {}
    found = sorted({target for targets in simd.values() for target in
                    (v.get("current") for v in targets.values()) if target})
    blas = next((entry for entry in _blas_info() if entry.get("user_api") == "blas"), {})
    try:
        import jax
        jax_version = jax.__version__
    except ImportError:
        jax_version = None
    return {"numpy": np.__version__, "scipy": scipy.__version__, "rebound": rebound_version,
            "jax": jax_version, "numpy_dispatch": found, "blas": blas.get("architecture"),
            "cpu_vector_features": _cpu_vector_features()}


def _cpu_vector_features() -> list[str]:
    """The CPU's vector extensions (XLA compiles mad's simulators for the host's)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform
        return [platform.machine()]
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines()
                  if line.startswith("flags")), [])
    return sorted(f for f in set(flags) if f.startswith(("avx", "fma", "sse4")))


def _blas_info() -> list[dict[str, Any]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return threadpool_info()


def _fresh_process_settings() -> None:
    """One BLAS thread: OpenBLAS and MKL split a matrix by thread count, which moves the
    last bits of mad's quantum eigensystem (1e-13 between one and two threads), so the
    records would depend on the machine's cores. Must precede numpy's import."""
    if "numpy" in sys.modules:
        raise RuntimeError("run tools/golden_records.py as a script: numpy is loaded already, "
                           "too late to pin its threads")
    os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                       "MKL_NUM_THREADS": "1"})
    # The sample is of the built-in suites; a plugin named for another purpose (the
    # tests' toy suite, importable only from tests/) must not stop it.
    os.environ.pop("DISCOVERYGYM_PLUGINS", None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the golden file")
    parser.add_argument("--replay", type=Path, help="write the played records here, unchecked")
    parser.add_argument("--timing", action="store_true", help="print seconds per episode")
    args = parser.parse_args(argv)
    _fresh_process_settings()
    # An empty cache: one written by other code, or with other threads, could differ.
    with tempfile.TemporaryDirectory(prefix="golden-cache-") as cache:
        os.environ["DISCOVERYGYM_CACHE"] = cache
        start = time.perf_counter()
        records = play_sample()
        if args.timing:
            print(f"{time.perf_counter() - start:.1f} s for {len(records)} episodes",
                  file=sys.stderr)
    if args.replay:
        args.replay.write_text(json.dumps(records, sort_keys=True) + "\n")
        args.replay.with_suffix(".machine.json").write_text(json.dumps(numerical_machine()))
        return 0
    if args.check:
        golden = json.loads(GOLDEN_PATH.read_text())
        changed = [SAMPLE[i][:3] for i, (a, b) in enumerate(zip(records, golden, strict=True))
                   if a != b]
        print(f"records differ: {changed}" if changed else f"{len(records)} records identical")
        return 1 if changed else 0
    refused = [SAMPLE[i][:3] for i, r in enumerate(records)
               if "unavailable" in r or str(r["error"]).startswith("agent crashed")]
    if refused:
        print(f"suite unavailable or agent crashed, nothing written: {refused}")
        return 1
    GOLDEN_PATH.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    MACHINE_PATH.write_text(json.dumps(numerical_machine(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(records)} records to {GOLDEN_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
