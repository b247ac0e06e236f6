"""The evaluation server as NatureBench's agents call it: `eval_token` in the body or
the query, their reply fields. The same agent calls go to their unmodified service
(tests/data/naturebench/eval_service.py, in this process on 127.0.0.1) and to ours, on
the same outputs of the packages written to their guide: the same figures come back."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import httpx
import pytest
from test_packages_naturebench import CLASSIFY, FLUX, PACKAGES, correct_outputs
from test_packages_naturebench_sota import THEIRS

from discoverygym.naturegym.format.package import load_package
from discoverygym.suites.packages.server import BackgroundServer, create_app
from discoverygym.suites.packages.service import EvaluationService

TOKEN = "nb-eval-token-for-tests"


def agent_session(base_url: str, attempts: list[dict[str, str]], write) -> list[dict]:
    """What a NatureBench agent does: write outputs, POST /evaluate with eval_token in
    the body, then GET /best_score and /time_remaining with it in the query."""
    replies = []
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for files in attempts:
            write(files)
            r = client.post("/evaluate", json={"eval_token": TOKEN})
            replies.append({"status": r.status_code, **r.json()})
        for path in ("/best_score", "/time_remaining"):
            r = client.get(path, params={"eval_token": TOKEN})
            replies.append({"status": r.status_code, **r.json()})
    return replies


def writer(out: Path):
    def write(files: dict[str, str]) -> None:
        shutil.rmtree(out, ignore_errors=True)
        for rel, text in files.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text(text)
    return write


def theirs(case: str, attempts, tmp_path: Path) -> list[dict]:
    tracker = THEIRS.ScoreTracker()
    run_dir = tmp_path / "theirs"
    tracker.register_task(case, PACKAGES / case, timeout=14_400, out_dir=run_dir,
                          eval_token=TOKEN)
    server = THEIRS.create_server("127.0.0.1", 0, tracker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        return agent_session(url, attempts, writer(run_dir / "workspace" / "output"))
    finally:
        server.shutdown()
        server.server_close()


def ours(case: str, attempts, tmp_path: Path) -> list[dict]:
    out = tmp_path / "ours" / "output"
    out.mkdir(parents=True)
    pkg = load_package(PACKAGES / case)
    service = EvaluationService(pkg, out, tmp_path / "ours" / "log.sqlite")
    try:
        with BackgroundServer(create_app(service, TOKEN)) as server:
            return agent_session(server.url, attempts, writer(out))
    finally:
        service.close()


def attempts_for(case: str) -> list[dict[str, str]]:
    good = correct_outputs(case)
    if case == CLASSIFY:
        half = {k: "id,label\n" + "".join(f"{i},0\n" for i in range(10)) for k in good}
        return [half, good, {"pbmc_small/predictions.csv": "id,label\n0,7\n"}]
    noisy = {k: json.dumps([v + 0.3 for v in json.loads(t)]) for k, t in good.items()}
    return [{"site_a/flux.json": "not json"}, noisy, good]


EVALUATE_FIELDS = ("attempt", "raw_scores", "per_instance_improvement",
                   "aggregate_improvement", "best_aggregate_improvement", "best_attempt")
BEST_FIELDS = ("best_attempt", "best_aggregate_improvement", "best_per_instance_improvement",
               "best_raw_scores", "total_attempts")


def _close(a, b):
    """Equal up to float rounding; an evaluator's error message names the output folder,
    which differs between the two services, so only its presence is compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(
            isinstance(a[k], str) and isinstance(b[k], str) if k == "error"
            else _close(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    return a == b


@pytest.mark.parametrize("case", [CLASSIFY, FLUX])
def test_same_replies_as_their_service(case, tmp_path):
    attempts = attempts_for(case)
    mine, reference = ours(case, attempts, tmp_path), theirs(case, attempts, tmp_path)
    n = len(attempts)
    for got, want in zip(mine[:n], reference[:n], strict=True):
        assert got["status"] == want["status"] == 200
        for field in EVALUATE_FIELDS:
            assert _close(got[field], want[field]), (field, got[field], want[field])
    for field in BEST_FIELDS:
        assert _close(mine[n][field], reference[n][field]), field
    time_fields = {"elapsed_seconds", "remaining_seconds", "timeout_seconds", "is_paused"}
    assert time_fields <= mine[n + 1].keys() and time_fields <= reference[n + 1].keys()
    assert mine[n + 1]["timeout_seconds"] == reference[n + 1]["timeout_seconds"] == 14_400
    # the attempts differ in score, so the comparison is not vacuous
    scores = [r["aggregate_improvement"] for r in reference[:n]]
    assert len(set(scores)) == n


def test_token_in_query_or_body_and_wrong_tokens_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    service = EvaluationService(load_package(PACKAGES / FLUX), out, tmp_path / "log.sqlite")
    with BackgroundServer(create_app(service, TOKEN)) as server, \
            httpx.Client(base_url=server.url, timeout=60) as client:
        assert client.post("/evaluate", params={"eval_token": TOKEN}).status_code == 200
        assert client.post("/evaluate", json={"eval_token": TOKEN}).status_code == 200
        assert client.get("/best_score", headers={"Authorization": f"Bearer {TOKEN}"}) \
            .json()["total_attempts"] == 2
        for bad in ({"json": {"eval_token": "wrong"}}, {"params": {"eval_token": ""}},
                    {"json": {"eval_token": 123}}, {"json": ["eval_token", TOKEN]},
                    {"content": b"{" * 100_000}, {"json": {"pad": "x" * 100_000,
                                                          "eval_token": TOKEN}}):
            assert client.post("/evaluate", **bad).status_code == 401, bad
        assert client.get("/best_score", params={"eval_token": TOKEN[:-1]}).status_code == 401
        # a token in the body reaches only /evaluate; the upload route reads no body
        assert client.post("/submissions", json={"eval_token": TOKEN}).status_code == 401
        assert service.log.count() == 2
    service.close()


def test_numpy_scalars_scored_here_refused_there(tmp_path):
    """Deliberately more lenient (README): an evaluator returning np.float32 is scored
    here; their runner cannot write it as JSON and fails the evaluation."""
    from discoverygym.naturegym.format.evaluator_runner import run_evaluator

    root = tmp_path / FLUX
    shutil.copytree(PACKAGES / FLUX, root)
    evaluator = root / "evaluation" / "evaluator.py"
    evaluator.write_text(evaluator.read_text() + (
        "\n_plain = main\n\ndef main():\n    import numpy as np\n"
        "    return {k: {m: np.float32(v) if isinstance(v, float) else v\n"
        "                for m, v in r.items()} for k, r in _plain().items()}\n"))
    out = tmp_path / "out"
    writer(out)(correct_outputs(FLUX))
    ours_ev = run_evaluator(load_package(root), out)
    assert ours_ev.ok and all(g > -1 for g in ours_ev.g.values())
    with pytest.raises(RuntimeError, match="not JSON serializable"):
        THEIRS.run_evaluator(root, out)
