"""The README's door parity table, produced by the parity tests themselves.

One scripted policy (tests/doors/test_door_parity.py: a call our tool refuses, one of the wrong
type, a bisection, a submit) is played on the toy suite's first episode through every door.
Each door's test asserts that its record equals the one the agent view leaves; run with
DISCOVERYGYM_PARITY_OUT set, each also writes its row. This script runs those tests, each
door in the environment it needs (.venv for the view, Gymnasium, MCP and Inspect;
.venv-openenv and .venv-rl for the doors whose dependencies cannot share it), and writes
the rows it got into docs/agents.md between the door-parity markers. A door whose environment
is missing is listed with the command that builds it, never silently dropped.

Usage: python tools/door_parity.py [--write]   (without --write: print the table)"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from discoverygym.report.markers import write_block  # noqa: E402

FIELDS = ("answer", "passed", "score", "observations", "submissions", "tool_calls",
          "tool_errors")
# (environment, test node, doors it reports, make target that builds the environment)
RUNS = (
    (".venv", "tests/doors/test_door_parity.py", ("agent view", "gym", "mcp", "inspect"),
     "make install-dev"),
    (".venv-openenv", "tests/doors/openenv/test_openenv_door.py::"
     "test_the_parity_policy_leaves_the_same_record_as_every_other_door", ("openenv",),
     "make test-openenv"),
    (".venv-rl", "tests/doors/verifiers/test_verifiers_rollout.py::"
     "test_the_parity_policy_through_verifiers_leaves_the_record_of_every_door",
     ("runner", "verifiers"), "make test-rl"),
)
DOOR_NAMES = {"agent view": "agent view (`episode.view()`)", "runner": "`discoverygym run`",
              "gym": "Gymnasium", "mcp": "MCP (stdio client)", "inspect": "Inspect AI",
              "openenv": "OpenEnv (WebSocket client)", "verifiers": "verifiers (`vf-eval`)"}
MARKER = "door-parity"  # the README block between <!-- door-parity:begin/end -->


def collect() -> tuple[dict[str, dict], dict[str, str]]:
    rows: dict[str, dict] = {}
    missing: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "DISCOVERYGYM_PARITY_OUT": out}
        env.pop("PYTHONPATH", None)  # each environment's own editable install
        for venv, node, doors, build in RUNS:
            python = ROOT / venv / "bin" / "python"
            if not python.exists():
                missing.update({door: f"not run here: no {venv} (`{build}`)" for door in doors})
                continue
            done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   node], cwd=ROOT, env=env, capture_output=True, text=True)
            for door in doors:
                row = Path(out, f"{door}.json")
                if row.exists():
                    rows[door] = json.loads(row.read_text())
                else:
                    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["?"]
                    missing[door] = f"test failed or skipped: {tail[0][:120]}"
    return rows, missing


def table(rows: dict[str, dict], missing: dict[str, str]) -> str:
    lines = ["| door | " + " | ".join(FIELDS) + " |", "|---" * (len(FIELDS) + 1) + "|"]
    for door, name in DOOR_NAMES.items():
        if door in rows:
            lines.append(f"| {name} | " + " | ".join(str(rows[door][f]) for f in FIELDS) + " |")
        elif door in missing:
            lines.append(f"| {name} | {missing[door]} |" + " |" * (len(FIELDS) - 1))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table into docs/agents.md")
    args = parser.parse_args(argv)
    rows, missing = collect()
    text = table(rows, missing)
    print(text)
    if args.write:
        write_block(ROOT / "docs" / "agents.md", MARKER, text)
    return 0 if not missing else 1


if __name__ == "__main__":
    sys.exit(main())
