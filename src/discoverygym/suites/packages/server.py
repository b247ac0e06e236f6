"""The evaluation server: a FastAPI application on 127.0.0.1 with a per-run opaque
token (the task id never appears in URLs or answers).

    POST /evaluate                 score the outputs in the shared output directory
    POST /submissions              remote mode: upload outputs (.tar.gz or .zip), evaluated
                                   in the background; answers {"id", "status"}
    GET  /submissions/{id}         poll a remote submission
    GET  /best_score, GET /time_remaining, GET /health
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

# FastAPI resolves endpoint annotations from module globals, so import at module level
# (this module is only imported when a server is wanted: the [server] extra).
import anyio
from fastapi import Depends, FastAPI, Header, HTTPException, Request

from ...naturegym.format.archives import UNPACK_LIMITS, UnpackLimits, UploadRefused  # noqa: F401 - tests patch
from ...naturegym.format.archives import unpack_archive as _unpack
from .service import (
    BudgetExpired,
    EvaluationService,
    OutputsRefused,
    naturebench_best_fields,
    naturebench_evaluate_fields,
    naturebench_time_fields,
)

MAX_UPLOAD_BYTES = 64 * 1024 * 1024
#: A JSON body that may carry NatureBench's `eval_token` (/evaluate): larger is not read.
MAX_TOKEN_BODY_BYTES = 64 * 1024


def new_token() -> str:
    return secrets.token_urlsafe(24)


async def _body_token(request: Request) -> Any:
    """`eval_token` from a JSON object body of at most MAX_TOKEN_BODY_BYTES, else None
    (a larger or malformed body is not parsed; the request then lacks a token)."""
    import json

    declared = request.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > MAX_TOKEN_BODY_BYTES:
        return None
    body = await request.body()
    if len(body) > MAX_TOKEN_BODY_BYTES:
        return None
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return data.get("eval_token") if isinstance(data, dict) else None


def create_app(service: EvaluationService, token: str) -> Any:
    app = FastAPI(title="discoverygym evaluation server", version="1",
                  description="Score research outputs against the published state of the art.")
    remote: dict[str, dict[str, Any]] = {}
    remote_lock = threading.Lock()

    async def authorised(request: Request,
                         authorization: str | None = Header(default=None)) -> None:
        """The bearer token, or (as NatureBench's agents send it) `eval_token` in the
        query or, on /evaluate, in a small JSON body."""
        if authorization is not None and secrets.compare_digest(
                authorization.encode(), f"Bearer {token}".encode()):
            return
        offered = request.query_params.get("eval_token")
        if offered is None and request.url.path == "/evaluate":
            offered = await _body_token(request)
        if not isinstance(offered, str) or not secrets.compare_digest(
                offered.encode(), token.encode()):
            raise HTTPException(status_code=401, detail="missing or wrong bearer token "
                                "(or eval_token)")

    def run_evaluation(output_dir: Path | None = None) -> dict[str, Any]:
        try:
            return service.evaluate(output_dir)
        except BudgetExpired as exc:
            raise HTTPException(status_code=409, detail=f"budget expired: {exc}") from exc
        except OutputsRefused as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok"}

    @app.post("/evaluate", dependencies=[Depends(authorised)])
    def evaluate() -> dict[str, Any]:
        result = run_evaluation()
        return {**result, **naturebench_evaluate_fields(result)}

    @app.get("/best_score", dependencies=[Depends(authorised)])
    def best_score() -> dict[str, Any]:
        return {**service.best_score(), **naturebench_best_fields(service)}

    @app.get("/time_remaining", dependencies=[Depends(authorised)])
    def time_remaining() -> dict[str, Any]:
        return {**service.timer.state(), **naturebench_time_fields(service.timer)}

    @app.post("/submissions", dependencies=[Depends(authorised)], status_code=202)
    async def submit(request: Request) -> dict[str, Any]:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
            raise HTTPException(status_code=413, detail="upload larger than 64 MiB")
        workdir = Path(tempfile.mkdtemp(prefix="dg-upload-"))
        upload = workdir / "upload"
        outputs = workdir / "outputs"
        outputs.mkdir()
        try:
            size = 0
            with open(upload, "wb") as fh:  # streamed to disk, never held in memory
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > MAX_UPLOAD_BYTES:
                        raise UploadRefused("upload larger than 64 MiB", 413)
                    fh.write(chunk)
            if service.timer.remaining() <= 0:
                raise UploadRefused("budget expired", 409)
            await anyio.to_thread.run_sync(_unpack, upload, outputs, UNPACK_LIMITS)
        except UploadRefused as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        sub_id = uuid.uuid4().hex
        with remote_lock:
            remote[sub_id] = {"id": sub_id, "status": "queued", "result": None}

        def work() -> None:
            remote[sub_id]["status"] = "running"
            try:
                remote[sub_id]["result"] = service.evaluate(outputs)
                remote[sub_id]["status"] = "done"
            except BudgetExpired as exc:
                remote[sub_id].update(status="failed", error=f"budget expired: {exc}")
            except Exception as exc:  # noqa: BLE001 - reported to the poller
                remote[sub_id].update(status="failed", error=f"{type(exc).__name__}: {exc}")
            finally:
                shutil.rmtree(workdir, ignore_errors=True)

        threading.Thread(target=work, daemon=True).start()
        return {"id": sub_id, "status": "queued"}

    @app.get("/submissions/{sub_id}", dependencies=[Depends(authorised)])
    def poll(sub_id: str) -> dict[str, Any]:
        if sub_id not in remote:
            raise HTTPException(status_code=404, detail="no such submission")
        return remote[sub_id]

    return app


class BackgroundServer:
    """uvicorn on 127.0.0.1 in a thread (port 0 picks a free port)."""

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port,
                                                     log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.host = host

    def __enter__(self) -> BackgroundServer:
        self._thread.start()
        import time

        deadline = time.time() + 20
        while not self._server.started:
            if time.time() > deadline or not self._thread.is_alive():
                raise RuntimeError("the evaluation server did not start")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        sock = self._server.servers[0].sockets[0]
        return f"http://{self.host}:{sock.getsockname()[1]}"

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
