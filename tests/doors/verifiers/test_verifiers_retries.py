"""The tool server as verifiers runs it (its own process, the rollout's task and state
over HTTP) under the chat harness's own MCP client (`MCPConnection`, which reconnects
and resends a failed call up to 6 times): a call whose answer is lost on the way back is
resent and charged once; the record of an episode stopped without an answer is left in
the state when the server is stopped (SIGTERM)."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from testpaths import TESTS

pytest.importorskip("verifiers.v1")

from verifiers.v1.harnesses.utils.mcp import MCPConnection  # noqa: E402

import toy_suite  # noqa: E402
from discoverygym.core import EpisodeSpec  # noqa: E402
from discoverygym.doors.verifiers.state import EpisodeState  # noqa: E402
from discoverygym.doors.verifiers.taskset import task_data  # noqa: E402
from discoverygym.doors.verifiers.toolset import EpisodeToolsetConfig  # noqa: E402

toy_suite.install()
SECRET = "state-secret"


class Channel(ThreadingHTTPServer):
    """The rollout's `/task` and `/state` endpoints (the interception server's part)."""

    def __init__(self, task_json: str) -> None:
        super().__init__(("127.0.0.1", 0), ChannelHandler)
        self.task_json = task_json
        self.state = EpisodeState().model_dump_json()


class ChannelHandler(BaseHTTPRequestHandler):
    server: Channel

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        assert self.headers["Authorization"] == f"Bearer {SECRET}"
        if self.path == "/task":
            body = json.dumps({"cls": "discoverygym.doors.verifiers.taskset:"
                                      "DiscoveryData", "task": self.server.task_json})
        else:
            body = self.server.state
        self._reply(200, body.encode())

    def do_PUT(self) -> None:  # noqa: N802
        self.server.state = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self._reply(200, b'{"ok": true}')

    def _reply(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class LossyProxy(ThreadingHTTPServer):
    """Forwards to the tool server, but drops the answer of the first `tools/call`
    after the server has run it (the connection closes with no reply)."""

    def __init__(self, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.upstream_port = upstream_port
        self.dropped = 0
        self.calls = 0


class ProxyHandler(BaseHTTPRequestHandler):
    server: LossyProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port,
                                              timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        if body and b'"tools/call"' in body:
            self.server.calls += 1
            if self.server.dropped == 0:
                self.server.dropped += 1
                self.close_connection = True  # the answer is lost on the way back
                return
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _forward  # noqa: N815


def _serve(server: ThreadingHTTPServer) -> ThreadingHTTPServer:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_call_whose_answer_was_lost_is_resent_and_charged_once(tmp_path):
    data = task_data(EpisodeSpec("toy", "guess", 3, {"budget": 10}))
    channel = _serve(Channel(data.model_dump_json()))
    port_file = tmp_path / "port"
    env = {**os.environ, "DISCOVERYGYM_PLUGINS": "toy_suite",
           "PYTHONPATH": os.pathsep.join([str(TESTS), *(str(Path(p).resolve()) for p in
                                         os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                         if p)]),
           "VF_CONFIG": EpisodeToolsetConfig(interpreter=False).model_dump_json(),
           "VF_STATE_URL": f"http://127.0.0.1:{channel.server_address[1]}/state",
           "VF_STATE_SECRET": SECRET, "MCP_PORT_FILE": str(port_file)}
    server = subprocess.Popen([sys.executable, "-m",
                               "discoverygym.doors.verifiers.toolset"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (port_file.exists() and port_file.read_text().strip()):
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proxy = _serve(LossyProxy(int(port_file.read_text())))

        async def play() -> list[str]:
            connection = MCPConnection({"url": f"http://127.0.0.1:"
                                               f"{proxy.server_address[1]}/mcp"})
            try:
                first = await connection.run(lambda c: c.call_tool("probe", {"x": 50.0}))
                second = await connection.run(lambda c: c.call_tool("probe", {"x": 25.0}))
                return [first.content[0].text, second.content[0].text]
            finally:
                await connection.aclose()

        texts = asyncio.run(play())
        assert proxy.dropped == 1 and proxy.calls == 3  # the first call went twice
        assert all(t.startswith("above:") for t in texts)
        server.send_signal(signal.SIGTERM)  # as the runtime stops it: no answer given
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
        channel.shutdown()
    state = EpisodeState.model_validate_json(channel.state)
    record = json.loads(state.record_json)
    assert record["error"] == "the rollout ended without an answer"
    assert record["usage"]["observations"] == 2 and record["usage"]["tool_calls"] == 2
