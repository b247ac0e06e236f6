"""The audit's attacks on the OpenEnv door's capacity (server.py), declared here beside
the server they attack (see core.audit_registry) and listed in
audit.PLATFORM_ATTACK_MODULES. Played in process against the app `discoverygym serve
openenv` serves, through its own HTTP and WebSocket routes; where openenv is not
installed (it has its own environment, .venv-openenv) the family does not apply.

- `openenv-capacity` (issue #38): on an evaluation server, `--max-sessions` + 4
  `POST /mcp openenv/session/create` with no socket, then a WebSocket client. Held:
  every such request is refused and the client gets a session (before: six requests
  took all 4 slots and the client got CAPACITY_REACHED). On a training server (where
  such sessions are offered), a squatter that pings its session with a failing
  `tools/list` every 0.5 s. Held: the session expires on schedule (before: failed
  requests counted as activity and kept it alive past the timeout forever)."""

from __future__ import annotations

import json
import time
from typing import Any

from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard, where_importable

FAMILY = "openenv-capacity"
MAX_SESSIONS = 2
#: The training server's timeout, and how long the squatter pings at most (OpenEnv's
#: reaper passes every max(timeout / 4, 5) s).
SESSION_TIMEOUT_S = 0.5
SQUAT_FOR_S = 20.0


def _rpc(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method,
                                     "params": params}).json()


def _socket_gets_a_session(client: Any) -> bool:
    """Whether a WebSocket client is served (a state message answered) rather than
    refused for capacity."""
    with client.websocket_connect("/ws") as ws:
        ws.send_text(json.dumps({"type": "state"}))
        answer = json.loads(ws.receive_text())
    return answer.get("type") != "error" or (
        answer.get("data", {}).get("code") != "CAPACITY_REACHED")


def _squat_evaluation(target: AuditTarget) -> tuple[bool, str]:
    from starlette.testclient import TestClient

    from .server import build_app

    app = build_app(target.suite.name, max_sessions=MAX_SESSIONS, session_timeout_s=60.0)
    with TestClient(app) as client:
        taken = sum("result" in _rpc(client, "openenv/session/create", {})
                    for _ in range(MAX_SESSIONS + 4))
        served = _socket_gets_a_session(client)
    return (taken == 0 and served,
            f"{taken} of {MAX_SESSIONS + 4} socketless sessions granted; a WebSocket "
            f"client {'was served' if served else 'got CAPACITY_REACHED'}")


def _squat_training(target: AuditTarget) -> tuple[bool, str]:
    from starlette.testclient import TestClient

    from .server import build_app

    app = build_app(target.suite.name, max_sessions=1, client_seeds=True,
                    session_timeout_s=SESSION_TIMEOUT_S)
    with TestClient(app) as client:
        created = _rpc(client, "openenv/session/create", {})
        if "result" not in created:
            return False, f"no socketless session to squat: {str(created)[:120]}"
        session_id = created["result"]["session_id"]
        alive, pings = True, 0
        deadline = time.monotonic() + SQUAT_FOR_S
        while time.monotonic() < deadline:
            answer = _rpc(client, "tools/list", {"session_id": session_id})
            pings += 1
            if "Unknown session_id" in json.dumps(answer):
                alive = False
                break
            time.sleep(0.5)
        served = _socket_gets_a_session(client)
    return (not alive and served,
            f"after {pings} failing pings the squatted session "
            f"{'was still alive' if alive else 'had expired'}; a WebSocket client "
            f"{'was served' if served else 'got CAPACITY_REACHED'}")


def capacity_attacks(target: AuditTarget) -> list[Outcome]:
    return [
        guard(FAMILY, f"{MAX_SESSIONS + 4} socketless sessions asked of an evaluation "
              f"server with {MAX_SESSIONS} slots, then a WebSocket client",
              "every one refused; the client served", lambda: _squat_evaluation(target)),
        guard(FAMILY, "a socketless session on a training server pinged with a failing "
              f"tools/list every 0.5 s ({SESSION_TIMEOUT_S} s timeout)",
              "it expires on schedule; the slot goes to a WebSocket client",
              lambda: _squat_training(target)),
    ]



ATTACKS = (
    AttackFamily(FAMILY, "socketless OpenEnv sessions holding capacity (where openenv is "
                 "installed)", capacity_attacks, applies=where_importable("openenv.core")),
)
