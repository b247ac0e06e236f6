"""A `--model` run fails fast when its server is not there, and stops cleanly (issue 36):
nothing listening is one `error:` line naming the URL, not ten minutes of retries; a
run stopped mid-eval keeps its finished records, writes summary.json marked
interrupted and exits 130."""

from __future__ import annotations

import json
import socket
import threading

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym.cli import app
from discoverygym.core import get_suite
from discoverygym.doors.inspect.endpoint import (
    EndpointUnreachable,
    check_endpoint,
    endpoint_of,
    shown,
)
from discoverygym.doors.inspect.model_run import run_model
from discoverygym.run import read_records

toy_suite.install()
SECRET = "sk-very-secret-key-0123456789"


def _closed_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_one_error_line_naming_the_url(tmp_path, monkeypatch):
    """Before: Inspect retried for 600 s and printed one line."""
    monkeypatch.setenv("LOCAL_API_KEY", SECRET)
    port = _closed_port()
    url = f"http://user:{SECRET}@127.0.0.1:{port}/v1?api_key={SECRET}"
    result = CliRunner().invoke(app, [
        "run", "toy", "--model", "openai-api/local/my-model", "--model-arg",
        f"base_url={url}", "--out", str(tmp_path / "run"), "--quiet"],
        env={"COLUMNS": "300"})
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the model's server")
    assert f"http://127.0.0.1:{port}/v1" in lines[0]
    assert SECRET not in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_a_server_that_never_answers_is_refused_after_the_timeout():
    """A socket that accepts connections (the kernel's backlog) but never replies."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        with pytest.raises(EndpointUnreachable, match="no answer within 0.3 s"):
            check_endpoint("openai-api/local/m", {"base_url": url}, timeout_s=0.3)


def test_any_http_answer_counts_as_there(fake_http):
    """A 404 (no /models route) or 401 (no key sent) is a server that is there."""
    assert check_endpoint("openai-api/local/m", {"base_url": fake_http}) == fake_http
    assert fake_http_paths == ["/v1/models"]


fake_http_paths: list[str] = []


@pytest.fixture()
def fake_http():
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            fake_http_paths.append(self.path)
            assert "Authorization" not in self.headers  # no key is sent
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake_http_paths.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_which_endpoint_is_checked(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("FAKEAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert endpoint_of("discoverygym/expert") is None  # in process: nothing to reach
    assert endpoint_of("mockllm/model") is None
    assert endpoint_of("openai-api/fakeai/m") == "http://127.0.0.1:9/v1"
    assert endpoint_of("openai-api/fakeai/m", {"base_url": "http://h:1/v1"}) == "http://h:1/v1"
    assert endpoint_of("openai-api/other/m") is None  # Inspect refuses it itself
    assert endpoint_of("openai/gpt-4o") == "https://api.openai.com/v1"
    assert shown("https://u:p@h:8/v1?key=k#f") == "https://h:8/v1"
    with pytest.raises(EndpointUnreachable, match="not an http"):
        check_endpoint("openai-api/x/m", {"base_url": "ftp://h/v1"})


def _cancelled_eval(real_eval, *, keep: int, raise_interrupt: bool = False):
    """Inspect's eval, stopped the way Ctrl-C stops it: the samples after the first
    `keep` lose their scores and the log is "cancelled" (or, `raise_interrupt`, the
    interrupt escapes eval and the logs are on disk only)."""
    def eval_then_stop(task, **kwargs):
        logs = real_eval(task, **kwargs)
        if raise_interrupt:
            raise KeyboardInterrupt
        for log in logs:
            log.status = "cancelled"
            for sample in log.samples[keep:]:
                sample.scores = None
        return logs
    return eval_then_stop


@pytest.mark.parametrize("raise_interrupt", [False, True])
def test_a_stopped_model_run_keeps_finished_records_and_says_interrupted(
        tmp_path, monkeypatch, raise_interrupt):
    import inspect_ai

    specs = get_suite("toy").episodes(range(3))
    monkeypatch.setattr(inspect_ai, "eval", _cancelled_eval(
        inspect_ai.eval, keep=1, raise_interrupt=raise_interrupt))
    result = run_model("toy", specs, model="discoverygym/expert", out_dir=tmp_path)
    assert result.interrupted
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["interrupted"] is True
    records = read_records(tmp_path / "records.jsonl")
    # The unfinished samples leave no record (--resume plays them), not a failed one.
    assert len(records) == (3 if raise_interrupt else 1)
    assert all(r["passed"] for r in records)


def test_ctrl_c_on_a_model_run_exits_130(tmp_path, monkeypatch):
    """Before: "Task interrupted", exit 0, and no `interrupted` in summary.json."""
    import inspect_ai

    monkeypatch.setattr(inspect_ai, "eval", _cancelled_eval(inspect_ai.eval, keep=1))
    result = CliRunner().invoke(app, ["run", "toy", "--model", "discoverygym/expert",
                                      "--seeds", "0-2", "--out", str(tmp_path), "--quiet"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "--resume" in result.output
    assert json.loads((tmp_path / "summary.json").read_text())["interrupted"] is True
