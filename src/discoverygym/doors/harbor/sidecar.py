"""Budgeted, interactive episodes (gravity budget-obs, mad) as Harbor tasks: the episode
lives in a sidecar container (`episode`) that serves its tools over MCP (streamable
HTTP), declared in task.toml's `[environment].mcp_servers`. The agent's container holds
no discoverygym and no spec. When the agent is done, a `[[verifier.collect]]` hook stops
the server, which writes the episode's record; the verifier reads that record. This
path needs Docker Compose (Harbor's docker environment); it is not played by the
bubblewrap environment.

`python -m discoverygym.doors.harbor.sidecar SPEC_JSON RECORD_PATH [--port N]` runs
the server."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
from pathlib import Path
from typing import Any

from ... import __version__
from ...core import EpisodeSpec, get_suite
from ...core.keys import remember_key_file
from . import layout
from .export import (
    ExportedTask,
    pins,
    python_image,
    task_toml,
    verifier_dockerfile,
    verifier_requirements,
    write_tests,
)
from .keyed import spec_conf, spec_from_conf

SERVICE = "episode"
PORT = 8000
RECORD = "/record/record.json"
PID_FILE = "/record/server.pid"

# Harbor's own compose file defines `main` (the agent's image, from ./Dockerfile); this
# one adds the sidecar.
COMPOSE = f"""services:
  main:
    depends_on:
      - {SERVICE}
  {SERVICE}:
    build:
      context: ./{SERVICE}
    # the server is not PID 1: when the collect hook stops it (and it writes the record),
    # the container stays up for Harbor to copy the record out
    command: ["sh", "-c", "python -m discoverygym.doors.harbor.sidecar /episode/spec.json {RECORD} --port {PORT} & echo $$! > {PID_FILE}; wait; sleep infinity"]
"""

#: The collect hook: stop the server and wait (bounded by the hook's timeout) until it
#: has exited, i.e. written the record.
COLLECT = (f"kill -TERM $(cat {PID_FILE}); "
           f"while kill -0 $(cat {PID_FILE}) 2>/dev/null; do sleep 0.2; done")


def serve_http(spec: EpisodeSpec, record_path: Path, *, host: str = "0.0.0.0",
               port: int = PORT) -> None:
    """Serve one episode's tools over MCP streamable HTTP until SIGTERM/SIGINT; the
    record is written when the episode ends, or at shutdown without an answer."""
    import uvicorn

    from ..mcp.server import build_server

    episode = spec.build()
    bound = build_server(episode, record_path, interpreter=False, agent_name="harbor")
    app = bound.server.streamable_http_app(host=host, stateless_http=False)
    # uvicorn turns SIGTERM into a clean shutdown, then raises the signal again under the
    # handler it found; a no-op one lets the record below be written before we exit
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        # a client still connected must not hold the shutdown (and the record) forever
        uvicorn.run(app, host=host, port=port, log_level="warning",
                    timeout_graceful_shutdown=3)
    finally:
        bound.close(None if episode.answered else "the agent finished without an answer")


def export_sidecar_task(spec: EpisodeSpec, task_dir: Path, *,
                        wheel: Path | None) -> ExportedTask:
    """Write a Harbor task whose episode is served live by an MCP sidecar."""
    episode = spec.build()
    try:
        prompt = episode.prompt
    finally:
        episode.end()
        episode.record()
    name = task_dir.name
    text = (prompt.rstrip() + "\n\n---\n\nThe tools named above are served by the MCP "
            f"server `discoverygym` (at http://{SERVICE}:{PORT}/mcp). The episode ends "
            "with your `submit` call; what it answers is final.\n")
    (task_dir / "instruction.md").write_text(text)
    extra = ("\n[[environment.mcp_servers]]\n" 'name = "discoverygym"\n'
             'transport = "streamable-http"\n' f'url = "http://{SERVICE}:{PORT}/mcp"\n'
             "\n[[verifier.collect]]\n" f'service = "{SERVICE}"\n'
             f"command = {json.dumps(COLLECT)}\n")
    toml = task_toml(name, spec, f"discoverygym {spec.suite} task "
                     "(live tools, MCP sidecar; needs Docker)",
                     artifacts=[{"source": RECORD, "service": SERVICE}],
                     agent_timeout_s=get_suite(spec.suite).agent_limits.time_s, extra=extra)
    (task_dir / "task.toml").write_text(toml)
    env = task_dir / "environment"
    (env / SERVICE).mkdir(parents=True)
    (env / "Dockerfile").write_text(f"FROM {python_image()}\nRUN useradd --create-home agent\n"
                                    f"WORKDIR {layout.APP}\nRUN chown agent {layout.APP}\n")
    (env / "docker-compose.yaml").write_text(COMPOSE)
    side = env / SERVICE
    # the sidecar serves the keyed episode, so its own container holds the key
    (side / "spec.json").write_text(json.dumps(spec_conf(spec)) + "\n")
    # the server's own libraries (discoverygym's `mcp` and `server` extras), pinned too
    (side / "requirements.txt").write_text(
        "\n".join(verifier_requirements(spec.suite) + pins(["mcp", "uvicorn"])) + "\n")
    if wheel is not None:
        shutil.copy2(wheel, side / wheel.name)
    dockerfile = verifier_dockerfile(wheel.name if wheel else None, [])
    (side / "Dockerfile").write_text(dockerfile.replace("WORKDIR /tests", "WORKDIR /episode")
                                     + "COPY spec.json /episode/spec.json\n"
                                     + "RUN mkdir -p /record\n")
    conf = {"spec": spec_conf(spec), "discoverygym_version": __version__, "record": RECORD,
            "logs": layout.VERIFIER_LOGS}
    write_tests(task_dir, spec.suite, conf, wheel)
    solution = task_dir / "solution"
    solution.mkdir()
    (solution / "solve.sh").write_text(
        "#!/bin/sh\n# A live episode has no file answer to replay: its oracle must call "
        "the MCP tools.\nexit 0\n")
    (solution / "solve.sh").chmod(0o755)
    return ExportedTask(task_dir, spec, "sidecar", notes=[
        "live tools in an MCP sidecar: needs Docker Compose; solve.sh does not solve it"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("spec")
    parser.add_argument("record")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args(argv)
    spec: dict[str, Any] = json.loads(Path(args.spec).read_text())
    remember_key_file(args.spec)  # it holds the task's key: sealed from any sandbox
    serve_http(spec_from_conf(spec), Path(args.record), host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
