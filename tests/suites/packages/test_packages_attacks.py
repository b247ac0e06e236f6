"""Attacks on the packages suite played as an agent would: agent code in its interpreter
makes links, FIFOs and huge files in OUTPUT_DIR, or swaps a folder for a link while the
host's file tools run. The host never follows a link, never hangs, copies a bounded
amount, charges nothing for refused outputs, and records what it refused."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from discoverygym.core import get_suite, safe_paths
from discoverygym.doors.shared.interpreter_tool import InterpreterTool
from discoverygym.naturegym.format.package import load_package
from discoverygym.suites.packages import service as service_mod
from discoverygym.suites.packages.server import BackgroundServer, create_app
from discoverygym.suites.packages.service import EvaluationService
from discoverygym.suites.packages.shipped import CATALOG

SWAPPER = """
import os, shutil, sys, time
sub, secret = sys.argv[1], sys.argv[2]
plain, link = sub + ".dir", sub + ".link"
os.mkdir(plain)
open(os.path.join(plain, "answer.json"), "w").write("{}")
os.symlink(secret, link)
while True:  # sub is a folder, then a link to the secret folder, then a folder ...
    try:
        os.rename(plain, sub)
        time.sleep(0.0003)
        os.rename(sub, plain)
        os.rename(link, sub)
        time.sleep(0.0003)
        os.rename(sub, link)
    except OSError:  # the host's write_file made sub a folder of its own: clear it
        if os.path.isdir(sub) and not os.path.islink(sub):
            shutil.rmtree(sub, ignore_errors=True)
"""
TRUTH = CATALOG / "gravity-force-law/evaluation/ground_truth"


def _agent_code(episode, code: str) -> str:
    """Run `code` in the agent's own sandboxed interpreter (DATA_DIR, OUTPUT_DIR set)."""
    tool = InterpreterTool(episode, time_limit_s=60, cpu_s=60)
    try:
        result = tool.run(code)
    finally:
        tool.close()
    assert not result.is_error, result.text
    return result.text


def _linked_answers(target_dir: Path) -> str:
    return f"""
import os
for name in ("system_1", "system_2"):
    os.makedirs(os.path.join(OUTPUT_DIR, name), exist_ok=True)
    os.symlink({str(target_dir)!r} + "/" + name + "/answer.json",
               os.path.join(OUTPUT_DIR, name, "answer.json"))
print("linked")
"""


def test_a_link_to_the_ground_truth_is_refused_free_and_flagged():
    """Before: evaluate read answer.json through the link and scored g = 1.0."""
    episode = get_suite("packages").episode("gravity-force-law")
    view = episode.view()
    _agent_code(episode, _linked_answers(TRUTH))
    result = view.call("evaluate", {})
    assert result.is_error and "symbolic link" in result.text
    assert "nothing was evaluated or charged" in result.text
    assert episode.usage.submissions == 0
    # list_files shows the agent what evaluate will refuse
    listing = view.call("list_files", {"path": "output:"})
    assert "symbolic link" in listing.text
    # read_file does not follow it either
    read = view.call("read_file", {"path": "output:system_1/answer.json"})
    assert read.is_error and "alpha" not in read.text
    record = episode.record(agent="link-attack")
    assert record.passed is False and record.score < 1.0
    checks = [f["check"] for f in record.details["validity"]["findings"]]
    assert "unsafe_outputs" in checks


def test_http_evaluate_refuses_links_fifos_and_hard_links(tmp_path):
    out = tmp_path / "out"
    (out / "system_1").mkdir(parents=True)
    (out / "system_2").mkdir()
    (out / "system_1" / "answer.json").symlink_to(TRUTH / "system_1/answer.json")
    os.mkfifo(out / "system_2" / "answer.json")  # a reader that opened it would block
    service = EvaluationService(load_package(CATALOG / "gravity-force-law"), out,
                                tmp_path / "log.sqlite", total_s=600)
    token = "tok"
    with BackgroundServer(create_app(service, token)) as server:
        client = httpx.Client(base_url=server.url, timeout=60,
                              headers={"Authorization": f"Bearer {token}"})
        refused = client.post("/evaluate")
        assert refused.status_code == 400
        detail = refused.json()["detail"]
        assert "symbolic link" in detail and "FIFO" in detail
        (out / "system_1" / "answer.json").unlink()
        (out / "system_2" / "answer.json").unlink()
        (out / "system_1" / "answer.json").write_text('{"alpha": 0.0}')
        os.link(out / "system_1" / "answer.json", out / "system_2" / "answer.json")
        assert "hard link" in client.post("/evaluate").json()["detail"]
        (out / "system_2" / "answer.json").unlink()
        assert client.post("/evaluate").json()["attempt"] == 1  # refusals were free
        client.close()
    service.close()


def test_outputs_over_the_caps_are_refused_without_copying(monkeypatch):
    """Before: every evaluate copied the whole output tree (1 GiB each time). The caps
    are lowered here to keep the test small; the defaults are in service.OUTPUT_CAPS."""
    monkeypatch.setattr(service_mod, "OUTPUT_CAPS", safe_paths.Caps(
        max_files=50, max_total_bytes=3 << 20, max_file_bytes=2 << 20))
    episode = get_suite("packages").episode("gravity-force-law")
    view = episode.view()
    attacks = {
        "one file over the cap (sparse: its size alone is refused)": (
            'open(os.path.join(OUTPUT_DIR, "big.bin"), "wb").truncate(5 << 20)', "holds"),
        "files over the total": (
            'for k in range(3):\n    open(os.path.join(OUTPUT_DIR, f"b{k}.bin"), "wb")'
            '.write(bytes(3 << 19))', "in all"),
        "too many files": (
            'for k in range(200):\n    open(os.path.join(OUTPUT_DIR, f"f{k}.txt"), "w")'
            '.write("x")', "more than 50 entries"),
    }
    for attack, (code, fragment) in attacks.items():
        _agent_code(episode, "import os\n"
                    "for n in os.listdir(OUTPUT_DIR):\n    os.remove(os.path.join(OUTPUT_DIR, n))\n"
                    + code + "\nprint('ok')")
        result = view.call("evaluate", {})
        assert result.is_error and fragment in result.text, (attack, result.text)
    assert episode.usage.submissions == 0
    episode.record(agent="cap-attack")


@pytest.mark.parametrize("openat2", [True, False])
def test_swapping_a_folder_for_a_link_never_reaches_the_target(tmp_path, monkeypatch, openat2):
    """Agent code swaps OUTPUT_DIR/sub between a folder and a link to a secret folder
    while the host's read_file/write_file/list_files run. Before: the check-then-open
    tools read the target ~4 % of the time and wrote files outside OUTPUT_DIR."""
    monkeypatch.setattr(safe_paths, "USE_OPENAT2", openat2)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "answer.json").write_text("SECRET-VALUE")
    episode = get_suite("packages").episode("gravity-force-law")
    view = episode.view()
    out = Path(view.workspace()["OUTPUT_DIR"])
    # The swapper is a separate process, as agent code in the sandbox would be (a thread
    # here would share the host's GIL and rarely hit the window).
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(out / "sub"), str(secret)])
    while not (out / "sub.link").is_symlink():  # the swapper has started
        time.sleep(0.01)
    try:
        texts = []
        for k in range(1000):
            texts.append(view.call("read_file", {"path": "output:sub/answer.json"}).text)
            view.call("write_file", {"path": f"sub/planted{k}.txt", "content": "x"})
            texts.append(view.call("list_files", {"path": "output:sub"}).text)
    finally:
        swapper.kill()
        swapper.wait()
    assert "{}" in texts  # the race was live: some reads met the folder state
    assert not any("SECRET-VALUE" in t for t in texts)
    assert sorted(p.name for p in secret.iterdir()) == ["answer.json"]
    episode.record(agent="race-attack")


def test_an_episode_dropped_without_record_removes_its_folder():
    episode = get_suite("packages").episode("gravity-force-law")
    root = Path(episode.view().workspace()["OUTPUT_DIR"]).parent
    assert root.name.startswith("dg-package-") and root.is_dir()
    del episode
    gc.collect()
    assert not root.exists()


def _probe_and_submit(episode) -> None:
    """The feedback attack: two evaluations of a scalar answer give its truth (absolute
    error at 0 and at 1), a third writes it back. No data is read."""
    view = episode.view()
    names = view.workspace()["instances"]
    for name in names:
        view.call("write_file", {"path": f"{name}/answer.json", "content": '{"alpha": 0.0}'})
    at_zero = view.call("evaluate", {}).data["raw_scores"]
    for name in names:
        view.call("write_file", {"path": f"{name}/answer.json", "content": '{"alpha": 1.0}'})
    at_one = view.call("evaluate", {}).data["raw_scores"]
    for name in names:
        if name in at_zero and isinstance(at_zero[name].get("absolute_error"), float):
            e0, e1 = at_zero[name]["absolute_error"], at_one[name]["absolute_error"]
            alpha = e0 if abs(abs(1 - e0) - e1) < 1e-9 else -e0
            view.call("write_file", {"path": f"{name}/answer.json",
                                     "content": json.dumps({"alpha": alpha})})
    view.call("evaluate", {})
    view.call("submit", {})


def test_feedback_probing_scores_nothing_with_a_split():
    """Before the split: this agent scored g = 1.0 (beyond SOTA) on gravity-force-law
    without reading the data. Now feedback covers the development system only."""
    episode = get_suite("packages").episode("gravity-force-law")
    _probe_and_submit(episode)
    record = episode.record(agent="feedback-probe")
    assert record.passed is False and record.value < -1.0
    assert record.details["development_score"] == pytest.approx(1.0)  # it did probe


def test_feedback_probing_works_without_a_split(tmp_path):
    """The same agent on the published layout (no split) reaches g = 1: the record
    says so (details.split), and `package check --require-split` flags such packages."""
    from discoverygym.naturegym.format.check import check_package

    root = tmp_path / "pkgs" / "gravity-force-law"
    shutil.copytree(CATALOG / "gravity-force-law", root)
    meta = json.loads((root / "metadata.json").read_text())
    meta["performance_entries"] = [{k: v for k, v in e.items() if k != "split"}
                                   for e in meta["performance_entries"]]
    (root / "metadata.json").write_text(json.dumps(meta))
    episode = get_suite("packages").episode("gravity-force-law", packages=str(root.parent))
    _probe_and_submit(episode)
    record = episode.record(agent="feedback-probe")
    assert record.value == pytest.approx(1.0) and record.details["split"].startswith("none")
    assert [f.rule for f in check_package(root, require_split=True)] == ["split"]
