"""Where things sit in an exported task's containers (agent and verifier). The exporter
writes these paths into the instruction, the Dockerfiles and the verifier's spec; the
verifier reads them back from the spec, so the two can never disagree."""

from __future__ import annotations

#: The agent's working directory.
APP = "/app"
#: The episode's workspace variables, as files (CSV, .npy, workspace.json) and a loader.
WORKSPACE = f"{APP}/workspace"
#: Where the agent writes the `submit` arguments (one JSON object).
ANSWER = f"{APP}/answer.json"
#: The verifier's spec file (inside the verifier image only).
SPEC = "/tests/spec.json"
#: Harbor's verifier output folder; reward.json is what Harbor reads.
VERIFIER_LOGS = "/logs/verifier"
#: The answer file is read with this cap (bytes); a larger file is refused, not cut.
MAX_ANSWER_BYTES = 2_000_000


def data_dir(index: int) -> str:
    """The container folder of the episode's `index`-th read-only folder."""
    return f"{APP}/data" + (str(index + 1) if index else "")


def output_dir(index: int) -> str:
    """The container folder of the episode's `index`-th writable folder."""
    return f"{APP}/output" + (str(index + 1) if index else "")
