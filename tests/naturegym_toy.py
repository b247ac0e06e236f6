"""A toy `prepare` function for the NatureGym build tests: noisy samples around a hidden
mean per instance. Switches in its arguments make it misbehave on purpose."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np


def samples(out: Path, inputs: Path, args: dict[str, Any]) -> None:
    rng = np.random.default_rng(args["seed"])
    if args.get("marker"):  # the kill test waits for this file, then kills the build
        Path(args["marker"]).write_text(f"{os.getpid()}\n")
    if args.get("sleep_s") and not os.environ.get("TOY_NO_SLEEP"):
        (out / "data").mkdir(parents=True, exist_ok=True)
        (out / "data" / "partial.csv").write_text("half written\n")  # a partial output
        time.sleep(args["sleep_s"])
    for name, params in args["instances"].items():
        data = out / "data" / name
        data.mkdir(parents=True, exist_ok=True)
        noise = rng.normal(0.0, 0.05, 200)
        if args.get("jitter"):  # not reproducible: a second run differs
            noise += time.perf_counter_ns() % 997 * 1e-9
        np.savetxt(data / "samples.csv", params["mu"] + noise, header="x", comments="",
                   fmt="%.9f")
        truth = out / "ground_truth" / name
        truth.mkdir(parents=True, exist_ok=True)
        # truth_offset: a truth that differs from the value the record declares hidden
        mu = params["mu"] + args.get("truth_offset", 0.0)
        (truth / "answer.json").write_text(json.dumps({"mu": mu}) + "\n")
        if args.get("leak_truth"):
            shutil.copy(truth / "answer.json", data / "answer_copy.json")
        if "source_file" in args:  # a checked input file, handed on to the agent
            (data / "source.txt").write_bytes((inputs / args["source_file"]).read_bytes())
    for target, source in args.get("copy_data", {}).items():  # one instance's data reused
        shutil.copy(out / "data" / source / "samples.csv", out / "data" / target / "samples.csv")
