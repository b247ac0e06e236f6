"""Running the door locally: the chat harness's helper installed ahead of time, and
`vf-eval` invoked with the settings a local run needs.

Two defaults of verifiers are wrong for a local run and are set here: the agent's
runtime is a remote sandbox service (`prime`; we use `subprocess`), and a finished run
is uploaded to the Prime Intellect platform (`--no-push`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

#: The chat harness runs a PEP 723 script whose dependencies `uv` resolves on first use.
LOCK_TIMEOUT_S = 600


def uv_bin() -> str:
    """The `uv` executable of this environment (the `uv` package of the [rl] extra)."""
    from uv import find_uv_bin

    return find_uv_bin()


def local_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's) with `uv` on PATH, where verifiers looks for it."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(Path(uv_bin()).parent), env.get("PATH", "")])
    return env


def _helper_script() -> tuple[Path, bytes]:
    from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
    from verifiers.v1.runtimes.subprocess import SubprocessRuntime

    data = CHAT_PROGRAM_SOURCE.encode()
    # The name the runtime gives the script (`Runtime.prepare_uv_script`).
    return Path(SubprocessRuntime.scripts_dir) / f"{hashlib.sha256(data).hexdigest()}.py", data


def helper_ready() -> bool:
    """Whether `prepare_chat_helper` has run for this verifiers version."""
    script, _ = _helper_script()
    return script.exists() and Path(f"{script}.lock").exists()


def prepare_chat_helper() -> Path:
    """Install the chat harness's helper script where the subprocess runtime looks for it,
    with a lock file beside it, so that rollouts later need no package index (without
    the lock, `uv sync --script` asks the index on every rollout). Needs the index once.
    Returns the script's path."""
    script, data = _helper_script()
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_bytes(data)
    for command in ("lock", "sync"):
        subprocess.run([uv_bin(), command, "--script", str(script), "-q", "--no-config"],
                       check=True, timeout=LOCK_TIMEOUT_S, env=local_env())
    return script


def run_dir_name(suite: str) -> str:
    """A run directory of its own for one `discoverygym rl eval`, so that its traces are
    found without guessing among earlier runs."""
    import time
    import uuid

    return f"{suite}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def eval_command(suite: str, *, model: str, base_url: str, api_key_var: str,
                 options: dict[str, str] | None = None, split: str = "eval",
                 seeds: str | None = None,
                 limit: int | None = None, rollouts: int = 1,
                 out: Path | None = None, run_dir: str | None = None) -> list[str]:
    """The `vf-eval` command line for a local run of `suite` (selection as in
    `discoverygym run`)."""
    argv = [str(Path(sys.executable).parent / "vf-eval"), "discoverygym-rl",
            "--env.taskset.suite", suite, "--env.taskset.split", split,
            "--env.agent.runtime.type", "subprocess", "--no-push", "--no-rich",
            "--model", model, "--client.base-url", base_url,
            "--client.api-key-var", api_key_var, "-r", str(rollouts)]
    for key, value in (options or {}).items():
        argv += [f"--env.taskset.options.{key.replace('-', '_')}", str(value)]
    if seeds is not None:
        argv += ["--env.taskset.seeds", seeds]
    if limit is not None:
        argv += ["-n", str(limit)]
    if out is not None:
        argv += ["-o", str(out)]
    if run_dir is not None:
        argv += ["--run.dir", run_dir]
    return argv
