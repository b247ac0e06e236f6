"""Harbor export without Harbor: the file layout, the truth kept out of what the agent
gets, the task's own verifier on the oracle's files, no answer and hostile answers,
and the MCP sidecar of a live task driven by an MCP client over HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.doors.harbor import export_tasks, layout
from discoverygym.doors.harbor.verify import verify, write_reward
from testpaths import TESTS

GRAVITY = EpisodeSpec("gravity", "period", 0, {"world": "A", "protocol": "full-obs"})
PACKAGES = EpisodeSpec("packages", "binary-drag-timescale", 0, {})
LIVE = EpisodeSpec("gravity", "period", 0, {"world": "A", "protocol": "budget-obs-100"})


def _own_env() -> dict[str, str]:
    """The environment for the exported task's own processes (verifier, sidecar): without
    the toy plugin other test modules register for their processes (DISCOVERYGYM_PLUGINS
    names a module only the tests folder holds), as in a real container."""
    env = dict(os.environ)
    env.pop("DISCOVERYGYM_PLUGINS", None)
    return env


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("harbor")
    tasks = export_tasks("gravity", out, specs=[GRAVITY, LIVE])
    tasks += export_tasks("packages", out, specs=[PACKAGES])
    return {(t.spec.suite, t.kind): t for t in tasks}


def _conf(task) -> dict:
    return json.loads((task.path / "tests" / "spec.json").read_text())


def _truth(task):
    """The truth the task is scored against, from a scored record: the oracle's files
    through the task's verifier (file tasks) or any answer (live tasks)."""
    if task.spec.suite == "packages":  # the reference values the oracle writes
        return sorted(json.loads(p.read_text())["tau_s"]
                      for p in (task.path / "solution").rglob("answer.json")
                      if "output0" in p.parts)
    if task.kind == "sidecar":
        episode = task.spec.build()
        episode.call("submit", {"answer": 1.0})
        return episode.record().truth
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        solution = task.path / "solution"
        shutil.copytree(solution, root / "app", ignore=shutil.ignore_patterns("solve.sh"))
        for i, folder in enumerate(_conf(task)["outputs"]):
            (root / "app" / f"output{i}").rename(root / folder.lstrip("/"))
        return verify(_conf(task), root=root).truth


def _agent_files(task_dir: Path) -> list[Path]:
    """Everything the agent's container is built from, and its instruction."""
    files = [p for p in (task_dir / "environment").rglob("*") if p.is_file()]
    return files + [task_dir / "instruction.md"]


def test_suites_declare_single_submit_episodes():
    assert get_suite("gravity").single_submit(GRAVITY)
    assert not get_suite("gravity").single_submit(LIVE)
    assert get_suite("packages").single_submit(PACKAGES)
    assert not get_suite("packages").single_submit(
        EpisodeSpec("packages", "x", 0, {"packages": "/somewhere"}))
    mad = get_suite("mad").default_episodes()[0]
    assert not get_suite("mad").single_submit(mad)


def test_file_task_layout(exported):
    task = exported[("gravity", "file")]
    root = task.path
    for rel in ("task.toml", "instruction.md", "environment/Dockerfile",
                "environment/workspace/df.csv", "environment/workspace/load_workspace.py",
                "tests/test.sh", "tests/Dockerfile", "tests/spec.json",
                "solution/solve.sh", "solution/answer.json"):
        assert (root / rel).is_file(), rel
    toml = (root / "task.toml").read_text()
    assert 'environment_mode = "separate"' in toml and 'network_mode = "no-network"' in toml
    assert 'user = "agent"' in toml and layout.ANSWER in toml
    instruction = (root / "instruction.md").read_text()
    assert layout.ANSWER in instruction and '"answer"' in instruction
    assert "discoverygym" not in (root / "environment" / "Dockerfile").read_text()
    assert "discoverygym==" in (root / "tests" / "Dockerfile").read_text()
    assert os.access(root / "solution" / "solve.sh", os.X_OK)
    assert task.oracle == "expert-adaptive" and task.oracle_passed is True


def test_workspace_files_rebuild_the_workspace(exported):
    import pandas as pd

    folder = exported[("gravity", "file")].path / "environment" / "workspace"
    episode = GRAVITY.build()
    frame = next(v for v in episode.workspace().values() if isinstance(v, pd.DataFrame))
    name = next(k for k, v in episode.workspace().items() if isinstance(v, pd.DataFrame))
    loaded = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(folder)!r});"
                             f"from load_workspace import *; print({name}.shape, G_SI)"],
                            capture_output=True, text=True, check=True).stdout
    assert str(frame.shape) in loaded and "6.674e-11" in loaded


def test_truth_never_in_what_the_agent_gets(exported):
    for key in (("gravity", "file"), ("packages", "file"), ("gravity", "sidecar")):
        task = exported[key]
        truth = _truth(task)
        assert truth is not None
        needles = {json.dumps(truth), repr(truth)}
        for value in truth if isinstance(truth, list) else [truth]:
            if isinstance(value, float):
                needles |= {repr(value), f"{value:.6g}", f"{value:.6e}"}
        for path in _agent_files(task.path):
            text = path.read_text(errors="replace")
            for needle in needles:
                assert needle not in text, (path, needle)
            assert "spec.json" not in path.name or "episode" in path.parts


def test_packages_outputs_are_the_answer(exported, tmp_path):
    task = exported[("packages", "file")]
    conf = _conf(task)
    assert conf["answer"] is None and conf["outputs"] == [layout.output_dir(0)]
    assert "/app/output" in (task.path / "task.toml").read_text()
    assert task.oracle_passed is True
    workspace = json.loads((task.path / "environment/workspace/workspace.json").read_text())
    assert workspace["DATA_DIR"] == layout.data_dir(0)
    assert workspace["OUTPUT_DIR"] == layout.output_dir(0)
    # nothing left in the output folder: a failed record that names no crash
    (tmp_path / "app" / "output").mkdir(parents=True)
    record = verify(conf, root=tmp_path)
    assert not record.passed and "internal error" not in (record.error or "")


def _root_with_answer(tmp_path: Path, content: bytes | None = None) -> Path:
    app = tmp_path / "app"
    app.mkdir(parents=True)
    if content is not None:
        (app / "answer.json").write_bytes(content)
    return tmp_path


def test_oracle_answer_passes_and_writes_reward(exported, tmp_path):
    task = exported[("gravity", "file")]
    root = _root_with_answer(tmp_path, (task.path / "solution/answer.json").read_bytes())
    record = verify(_conf(task), root=root)
    assert record.passed and record.error is None
    write_reward(record, tmp_path / "logs")
    assert json.loads((tmp_path / "logs" / "reward.json").read_text())["reward"] == 1.0
    assert json.loads((tmp_path / "logs" / "record.json").read_text())["passed"] is True


def test_no_answer_scores_zero_with_the_reason(exported, tmp_path):
    record = verify(_conf(exported[("gravity", "file")]), root=_root_with_answer(tmp_path))
    assert not record.passed and record.score == 0
    assert "no answer file" in record.error
    write_reward(record, tmp_path / "logs")
    assert json.loads((tmp_path / "logs" / "reward.json").read_text())["reward"] == 0.0


@pytest.mark.parametrize("kind", ["symlink", "huge", "deep", "big-int", "list", "wrong-schema",
                                  "fifo"])
def test_hostile_answer_files_score_zero_with_a_reason(exported, tmp_path, kind):
    task = exported[("gravity", "file")]
    good = (task.path / "solution/answer.json").read_bytes()
    root = _root_with_answer(tmp_path)
    answer = root / "app" / "answer.json"
    secret = tmp_path / "oracle-answer.json"
    secret.write_bytes(good)  # a file that would pass, reachable only through the link
    if kind == "symlink":
        answer.symlink_to(secret)
    elif kind == "huge":
        answer.write_bytes(good[:-2] + b" " * 10_000_000 + b"}\n")
    elif kind == "deep":
        answer.write_text('{"answer": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif kind == "big-int":
        answer.write_text('{"answer": 1' + "0" * 400 + "}")
    elif kind == "list":
        answer.write_text("[1.0]")
    elif kind == "wrong-schema":
        answer.write_text('{"answer": "one year"}')
    elif kind == "fifo":
        os.mkfifo(answer)
    started = time.monotonic()
    record = verify(_conf(task), root=root)
    assert time.monotonic() - started < 30
    assert not record.passed and record.score == 0
    reasons = {"symlink": "symbolic link", "huge": "bytes", "deep": "nested",
               "big-int": "digits", "list": "one JSON object", "wrong-schema": "refused",
               "fifo": "FIFO"}
    assert reasons[kind] in record.error, record.error


def test_hostile_outputs_are_left_out(exported, tmp_path):
    task = exported[("packages", "file")]
    out = tmp_path / "app" / "output"
    shutil.copytree(task.path / "solution" / "output0", out)
    for i, target in enumerate(sorted(out.rglob("answer.json"))):
        secret = tmp_path / f"elsewhere{i}.json"  # files that would pass, reached by links
        secret.write_bytes(target.read_bytes())
        target.unlink()
        target.symlink_to(secret)
    record = verify(_conf(task), root=tmp_path)
    assert not record.passed
    assert "left out of the outputs" in record.error and "symbolic link" in record.error


def test_sidecar_task_declares_its_mcp_server(exported):
    task = exported[("gravity", "sidecar")]
    toml = (task.path / "task.toml").read_text()
    assert "[[environment.mcp_servers]]" in toml and "streamable-http" in toml
    assert "[[verifier.collect]]" in toml
    compose = (task.path / "environment" / "docker-compose.yaml").read_text()
    assert "episode:" in compose and "discoverygym.doors.harbor.sidecar" in compose
    assert "discoverygym" not in (task.path / "environment" / "Dockerfile").read_text()
    assert (task.path / "environment" / "episode" / "spec.json").is_file()


def test_missing_sidecar_record_scores_zero(exported, tmp_path):
    record = verify(_conf(exported[("gravity", "sidecar")]), root=tmp_path)
    assert not record.passed and "no usable record" in record.error


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sidecar_serves_the_live_episode_over_http(exported, tmp_path):
    """The sidecar of a budgeted task: an MCP client observes and submits over HTTP, the
    server writes the record when the episode ends, and the task's verifier scores it."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    task = exported[("gravity", "sidecar")]
    spec_file = task.path / "environment" / "episode" / "spec.json"
    record_path = tmp_path / "record" / "record.json"
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "discoverygym.doors.harbor.sidecar",
                               str(spec_file), str(record_path), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=_own_env())

    async def play() -> list[str]:
        for _ in range(600):  # wait for the port (a loaded machine starts it slowly)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                await anyio.sleep(0.1)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                names = [t.name for t in (await session.list_tools()).tools]
                # t = 0 lies in every draw's window (the export keys its draws with a
                # fresh key, so the window's end differs from run to run)
                seen = await session.call_tool("observe", {"times": [0.0]})
                assert not seen.is_error
                await session.call_tool("submit", {"answer": 1.0})
                return names

    try:
        names = anyio.run(play)
        for _ in range(50):
            if record_path.exists():
                break
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert "observe" in names and "submit" in names and "python" not in names
    written = json.loads(record_path.read_text())
    assert written["usage"]["observations"] == 1 and written["answer"] == 1.0
    # the sidecar offers no python (the agent computes in its own container); its record
    # keeps the calls the way every door does (doors/shared/call_log.py)
    assert [e["tool"] for e in written["details"]["tool_log"]] == ["observe", "submit"]
    assert written["details"]["sandbox"]["python_calls"] == 0
    conf = _conf(task)
    root = tmp_path / "verifier"
    (root / "record").mkdir(parents=True)
    shutil.copy2(record_path, root / "record" / "record.json")
    record = verify(conf, root=root)
    assert record.passed is False and record.answer == 1.0 and record.error is None


def test_cli_export(tmp_path):
    from typer.testing import CliRunner

    from discoverygym.cli import app

    result = CliRunner().invoke(app, ["export", "harbor", "gravity", str(tmp_path / "out"),
                                      "--protocol", "full-obs", "--tasks", "period",
                                      "--worlds", "A,B"])
    assert result.exit_code == 0, result.output
    # opaque names; the private index beside them maps each back to its episode
    names = sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir())
    assert len(names) == 2 and all(re.fullmatch(r"gravity-[0-9a-f]{16}", n) for n in names)
    index = json.loads((tmp_path / "out" / "discoverygym-index.json").read_text())["tasks"]
    assert sorted(index) == names
    assert sorted(e["options"]["world"] for e in index.values()) == ["A", "B"]
    assert "oracle passes 2" in result.output
    bad = CliRunner().invoke(app, ["export", "harbor", "gravity", str(tmp_path / "x"),
                                   "--no-such-option", "1"])
    assert bad.exit_code == 1 and "no option" in bad.output


def test_sidecar_writes_the_record_when_stopped_without_an_answer(exported, tmp_path):
    """What the collect hook does when the agent never submitted: SIGTERM, and the
    server writes a failed record that says why before it exits."""
    pytest.importorskip("mcp")
    pytest.importorskip("uvicorn")
    task = exported[("gravity", "sidecar")]
    record_path = tmp_path / "record.json"
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "discoverygym.doors.harbor.sidecar",
                               str(task.path / "environment" / "episode" / "spec.json"),
                               str(record_path), "--host", "127.0.0.1", "--port", str(port)],
                              env=_own_env())
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        server.terminate()
        assert server.wait(timeout=30) is not None
    finally:
        server.kill()
    written = json.loads(record_path.read_text())
    assert written["passed"] is False and "without an answer" in written["error"]


def test_output_folder_replaced_by_a_link_is_refused(exported, tmp_path):
    task = exported[("packages", "file")]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(task.path / "solution" / "output0", elsewhere)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "output").symlink_to(elsewhere)
    record = verify(_conf(task), root=tmp_path)
    assert not record.passed and "is a symbolic link" in record.error


#: Import names of the distributions optional extras bring, for the test below.
OPTIONAL_IMPORTS = {"astropy": "astropy", "celerite2": "celerite2", "dynesty": "dynesty",
                    "jax": "jax", "pillow": "PIL", "sympy": "sympy", "pyyaml": "yaml",
                    "pyarrow": "pyarrow", "inspect-ai": "inspect_ai", "openai": "openai",
                    "duckdb": "duckdb", "matplotlib": "matplotlib", "mcp": "mcp",
                    "gymnasium": "gymnasium", "ray": "ray", "fastapi": "fastapi",
                    "uvicorn": "uvicorn", "httpx": "httpx"}

BLOCKING_VERIFIER = """
import json, sys
from pathlib import Path
blocked = set(json.loads(sys.argv[1]))
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"{name} is not in the verifier image")
sys.meta_path.insert(0, Block())
from discoverygym.doors.harbor.verify import verify
record = verify(json.loads(Path(sys.argv[2]).read_text()), root=Path(sys.argv[3]))
print(json.dumps({"passed": record.passed, "error": record.error}))
"""


def test_verifier_needs_only_its_pinned_requirements(exported, tmp_path):
    """The verifier image installs tests/requirements.txt and nothing else: with every
    other optional library unimportable, the oracle's files still pass."""
    tasks = [exported[("gravity", "file")], exported[("packages", "file")]]
    tasks += export_tasks("tpbench", tmp_path / "more", specs=[
        EpisodeSpec("tpbench", get_suite("tpbench").default_episodes()[0].task_id, 0, {})])
    tasks += export_tasks("stargazer", tmp_path / "more", specs=[
        EpisodeSpec("stargazer", "easy-000", 0, {"mode": "v2"})])
    for task in tasks:
        pinned = {line.split("==")[0].lower() for line in
                  (task.path / "tests" / "requirements.txt").read_text().split()}
        blocked = [mod for dist, mod in OPTIONAL_IMPORTS.items() if dist not in pinned]
        root = tmp_path / f"root-{task.path.name}"
        shutil.copytree(task.path / "solution", root / "app",
                        ignore=shutil.ignore_patterns("solve.sh"))
        for i, folder in enumerate(_conf(task)["outputs"]):
            (root / "app" / f"output{i}").rename(root / folder.lstrip("/"))
        done = subprocess.run([sys.executable, "-c", BLOCKING_VERIFIER, json.dumps(blocked),
                               str(task.path / "tests" / "spec.json"), str(root)],
                              capture_output=True, text=True, timeout=300, env=_own_env())
        assert done.returncode == 0, (task.path.name, done.stderr[-2000:])
        verdict = json.loads(done.stdout.strip().splitlines()[-1])
        assert verdict == {"passed": True, "error": None}, (task.path.name, verdict)


def test_a_plugin_suite_exports_through_the_registry(tmp_path):
    """The exporter names no suite: a suite registered from outside (the toy plugin, a
    budgeted guessing game that declares no single-submit episodes) exports as live
    tasks."""
    tests = TESTS
    env = {**os.environ, "DISCOVERYGYM_PLUGINS": "toy_suite",
           "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "discoverygym.cli", "export", "harbor", "toy",
                           str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    tasks = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    index = json.loads((tmp_path / "discoverygym-index.json").read_text())["tasks"]
    assert sorted(index) == [t.name for t in tasks]  # opaque names, mapped back privately
    assert sorted(e["seed"] for e in index.values()) == list(range(4))
    for task in tasks:
        assert "[[environment.mcp_servers]]" in (task / "task.toml").read_text()
        assert json.loads((task / "tests" / "spec.json").read_text())["spec"]["suite"] == "toy"


def test_wheel_goes_into_the_verifier_image(tmp_path):
    """Until discoverygym is on the package index, --wheel puts the exact build into the
    verifier's image (and a live task's sidecar)."""
    wheel = tmp_path / "discoverygym-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip: only copied here
    file_task, live = export_tasks("gravity", tmp_path / "out", specs=[GRAVITY, LIVE],
                                   wheel=wheel)
    for folder in (file_task.path / "tests", live.path / "tests",
                   live.path / "environment" / "episode"):
        assert (folder / wheel.name).read_bytes() == wheel.read_bytes()
        dockerfile = (folder / "Dockerfile").read_text()
        assert f"COPY {wheel.name} /tmp/{wheel.name}" in dockerfile
        assert f"--no-deps /tmp/{wheel.name}" in dockerfile
    assert not list((file_task.path / "environment").rglob("*.whl"))
