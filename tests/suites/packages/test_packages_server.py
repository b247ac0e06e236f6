"""The evaluation server over real HTTP on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import io
import json
import tarfile
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from discoverygym.naturegym.format.package import load_package
from discoverygym.suites.packages.server import BackgroundServer, create_app
from discoverygym.suites.packages.service import EvaluationService
from discoverygym.suites.packages.shipped import CATALOG

PKG = CATALOG / "gravity-force-law"


def unsplit_package():
    """The package as a published-layout one (no development/evaluation split): the
    server's own behaviour is tested on every instance; the split has its own test."""
    pkg = load_package(PKG)
    pkg.instances = [dataclasses.replace(i, split=None) for i in pkg.instances
                     if i.name != "system_dev"]
    return pkg


def _answers(out, alpha1=0.03, alpha2=-0.04):
    for name, alpha in (("system_1", alpha1), ("system_2", alpha2)):
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "answer.json").write_text(json.dumps({"alpha": alpha}))


@pytest.fixture()
def served(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    service = EvaluationService(unsplit_package(), out, tmp_path / "log.sqlite", total_s=600)
    token = "t0ken-for-tests"
    with BackgroundServer(create_app(service, token)) as server:
        client = httpx.Client(base_url=server.url, timeout=60,
                              headers={"Authorization": f"Bearer {token}"})
        yield client, out, service, tmp_path
        client.close()
    service.close()


def test_health_openapi_and_token(served):
    client, *_ = served
    assert client.get("/health").json() == {"status": "ok"}
    assert "/evaluate" in client.get("/openapi.json").json()["paths"]
    assert httpx.post(f"{client.base_url}/evaluate").status_code == 401
    bad = httpx.post(f"{client.base_url}/evaluate", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401
    body = client.get("/time_remaining").json()
    # ours, and NatureBench's names beside them (test_packages_naturebench_service.py)
    assert set(body) == {"elapsed_s", "remaining_s", "total_s", "paused", "elapsed_seconds",
                         "remaining_seconds", "timeout_seconds", "is_paused", "should_skip"}
    assert "gravity-force-law" not in json.dumps(client.get("/best_score").json())


def test_evaluate_scores_and_keeps_the_best(served):
    client, out, *_ = served
    _answers(out, 0.5, 0.5)
    worse = client.post("/evaluate").json()
    _answers(out)  # the exact truth: g = +1 on both systems
    best = client.post("/evaluate").json()
    assert worse["attempt"] == 1 and best["attempt"] == 2
    assert best["g"] == {"system_1": pytest.approx(1.0), "system_2": pytest.approx(1.0)}
    assert best["best_so_far"]["attempt"] == 2
    _answers(out, 1.0, 1.0)
    third = client.post("/evaluate").json()
    assert third["best_so_far"]["attempt"] == 2
    assert client.get("/best_score").json()["best"]["score"] == pytest.approx(1.0)


def test_concurrent_submissions_are_numbered_and_logged(served):
    client, out, service, _ = served
    _answers(out)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: client.post("/evaluate").json(), range(6)))
    assert sorted(r["attempt"] for r in results) == [1, 2, 3, 4, 5, 6]
    assert service.log.count() == 6


def test_malformed_outputs_are_an_attempt_not_a_crash(served):
    client, out, *_ = served
    (out / "system_1").mkdir()
    (out / "system_1" / "answer.json").write_text("{not json")
    body = client.post("/evaluate").json()
    assert body["ok"] is True and body["g"] == {"system_1": -1.0, "system_2": -1.0}
    assert "not valid JSON" in body["raw_scores"]["system_1"]["error"]


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_remote_mode_upload_and_poll(served):
    client, *_ = served
    archive = _tar({"system_1/answer.json": b'{"alpha": 0.03}',
                    "system_2/answer.json": b'{"alpha": -0.04}'})
    sub = client.post("/submissions", content=archive).json()
    assert sub["status"] == "queued"
    deadline = time.time() + 60
    while (state := client.get(f"/submissions/{sub['id']}").json())["status"] not in (
            "done", "failed"):
        assert time.time() < deadline
        time.sleep(0.1)
    assert state["status"] == "done" and state["result"]["score"] == pytest.approx(1.0)
    assert client.get("/submissions/nope").status_code == 404


def test_bad_uploads_are_refused(served):
    client, *_ = served
    assert client.post("/submissions", content=b"this is not an archive").status_code == 400
    escaping = _tar({"../../etc/evil": b"x"})
    resp = client.post("/submissions", content=escaping)
    assert resp.status_code == 400 and "outside" in resp.json()["detail"]
    from discoverygym.suites.packages import server as server_mod

    too_big = b"\0" * (server_mod.MAX_UPLOAD_BYTES + 1)
    assert client.post("/submissions", content=too_big).status_code == 413


def test_expired_budget_refuses(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    service = EvaluationService(unsplit_package(), out, tmp_path / "log.sqlite", total_s=0.05)
    time.sleep(0.1)
    with BackgroundServer(create_app(service, "tok")) as server:
        resp = httpx.post(f"{server.url}/evaluate", headers={"Authorization": "Bearer tok"})
    assert resp.status_code == 409 and "budget expired" in resp.json()["detail"]
    service.close()


def test_restart_keeps_the_log_and_the_best_score(tmp_path):
    out = tmp_path / "out"
    _answers(out)
    log = tmp_path / "log.sqlite"
    first = EvaluationService(unsplit_package(), out, log, total_s=600)
    with BackgroundServer(create_app(first, "tok")) as server:
        httpx.post(f"{server.url}/evaluate", headers={"Authorization": "Bearer tok"}, timeout=60)
    first.close()
    _answers(out, 0.9, 0.9)
    second = EvaluationService(unsplit_package(), out, log, total_s=600)
    with BackgroundServer(create_app(second, "tok")) as server:
        headers = {"Authorization": "Bearer tok"}
        attempt = httpx.post(f"{server.url}/evaluate", headers=headers, timeout=60).json()
        best = httpx.get(f"{server.url}/best_score", headers=headers).json()
    second.close()
    assert attempt["attempt"] == 2
    assert best["attempts"] == 2 and best["best"]["attempt"] == 1
    assert best["best"]["score"] == pytest.approx(1.0)


def test_solve_timer_pauses_while_the_evaluator_runs(tmp_path, monkeypatch):
    """A fake clock: the evaluation takes 100 s of it, the solve time charged is only
    the time outside evaluations, and the timer reads paused during the evaluation."""
    from discoverygym.naturegym.format.evaluator_runner import Evaluation
    from discoverygym.suites.packages import service as service_mod

    clock = {"now": 1000.0}
    monkeypatch.setattr(service_mod.time, "monotonic", lambda: clock["now"])
    seen = {}

    def slow_evaluator(package, output_dir, **_):
        seen["paused"] = service.timer.paused
        clock["now"] += 100.0
        return Evaluation(ok=True, g={"system_1": 0.0}, score=0.0)

    monkeypatch.setattr(service_mod, "run_evaluator", slow_evaluator)
    service = EvaluationService(unsplit_package(), tmp_path, tmp_path / "log.sqlite",
                                total_s=600)
    clock["now"] += 30.0  # the agent works 30 s
    service.evaluate()
    clock["now"] += 20.0  # and 20 s more
    assert seen["paused"] is True and service.timer.paused is False
    assert service.timer.elapsed() == pytest.approx(50.0)
    assert service.timer.remaining() == pytest.approx(550.0)
    service.close()
    # The elapsed time survives a restart.
    again = EvaluationService(unsplit_package(), tmp_path, tmp_path / "log.sqlite",
                              total_s=600)
    assert again.timer.elapsed() == pytest.approx(50.0)
    again.close()


def test_with_a_split_http_evaluate_reports_development_only(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _answers(out)  # the exact truth on the evaluation systems
    (out / "system_dev").mkdir()
    (out / "system_dev" / "answer.json").write_text('{"alpha": 0.0}')
    service = EvaluationService(load_package(PKG), out, tmp_path / "log.sqlite", total_s=600)
    with BackgroundServer(create_app(service, "tok")) as server:
        body = httpx.post(f"{server.url}/evaluate", headers={"Authorization": "Bearer tok"},
                          timeout=60).json()
    text = json.dumps(body)
    assert set(body["g"]) == {"system_dev"} and "system_1" not in text
    final = service.final_evaluation()
    assert set(final.g) == {"system_1", "system_2"}
    assert final.score == pytest.approx(1.0)
    service.close()


def _zip(members: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)  # a symbolic link
            zf.writestr(info, target)
    return buffer.getvalue()


def test_upload_bombs_and_links_are_refused_without_expanding(served, monkeypatch):
    """Before: a 1.5 MB zip expanded to 3 GiB in the server's memory."""
    from discoverygym.suites.packages import server as server_mod

    client, *_ = served
    monkeypatch.setattr(server_mod, "UNPACK_LIMITS", server_mod.UnpackLimits(
        max_members=50, max_total_bytes=8 << 20, max_ratio=200.0))
    bomb = _zip({"system_1/answer.json": bytes(64 << 20)})  # 64 MiB of zeros, ~64 KB zipped
    assert len(bomb) < 200_000
    refused = client.post("/submissions", content=bomb)
    assert refused.status_code == 413 and "expands past" in refused.json()["detail"]
    many = _zip({f"f{k}.txt": b"x" for k in range(60)})
    assert client.post("/submissions", content=many).status_code == 413
    linked = _zip({}, links={"system_1/answer.json": "/etc/passwd"})
    answer = client.post("/submissions", content=linked)
    assert answer.status_code == 400 and "not a regular file" in answer.json()["detail"]
    escaping = _zip({"../../escape.json": b"{}"})
    answer = client.post("/submissions", content=escaping)
    assert answer.status_code == 400 and "outside" in answer.json()["detail"]
    tar_bomb = _tar({"system_1/answer.json": bytes(64 << 20)})
    assert client.post("/submissions", content=tar_bomb).status_code == 413
    # a normal upload still works
    ok = client.post("/submissions", content=_zip({"system_1/answer.json": b'{"alpha": 0.03}'}))
    assert ok.status_code == 202
