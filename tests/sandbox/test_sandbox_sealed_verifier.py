"""A verifier never scores below its task's sandbox level, and nothing the answer runs
holds a host file (issue #28, items 2 and 3). Played at every isolation level this host
has, forced through $DISCOVERYGYM_SANDBOX_ISOLATION, through the doors an answer has:
the episode's `submit` tool, the Harbor verifier, the interpreter, a one-shot script.

Before: at rlimits-only an answer read its problem's YAML from the installed package and
returned the reference (a pass); a detached process rewrote reward.json after scoring;
the interpreter held the host's sandbox.log on descriptors 5 and 6 (64 MiB written past
the sandbox's sized areas, and read back whole by the host)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from discoverygym.core import EpisodeSpec, get_suite, paths
from discoverygym.doors.harbor.attacks import DETACH_AND_FORGE
from discoverygym.doors.harbor.verify import close_logs, score
from discoverygym.sandbox import (
    LEVELS,
    Interpreter,
    SandboxConfig,
    SandboxUnavailable,
    meets,
    run_isolated,
    seal,
    strength,
)
from discoverygym.sandbox.attacks import LIST_FDS, host_files
from discoverygym.sandbox.isolation import LEVEL_ENV, _level_works, processes_of_uid
from discoverygym.suites.tpbench.attacks import STEAL_REFERENCE
from discoverygym.suites.tpbench.execute import MINIMUM_ISOLATION

WORKING = [lvl for lvl in LEVELS if _level_works(lvl, sys.executable)]
SCORED = [lvl for lvl in WORKING if meets(lvl, MINIMUM_ISOLATION)]
PROBLEM = "bead-hoop-equilibrium"  # one number per test input

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to a uid needs root")


@pytest.fixture
def open_tmp():
    """A folder every uid can reach (pytest's own lies under a 0700 folder, which would
    stop a sandbox's uid for reasons of its own)."""
    path = Path(tempfile.mkdtemp(prefix="dg-sealed-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=WORKING)
def level(request, monkeypatch):
    monkeypatch.setenv(LEVEL_ENV, request.param)
    return request.param


def _problem_text() -> tuple[str, str]:
    episode = get_suite("tpbench").episode(PROBLEM)
    ws = episode.view().workspace()
    return ws["function_name"], ", ".join(ws["argument_names"])


# The cheat of the issue (the audit's own script, played here through every door): find
# the problem's YAML in the installed package, define its reference, return its value.


def _cheat() -> str:
    function, _ = _problem_text()
    return (STEAL_REFERENCE.replace("PKG", repr(str(paths.package_dir())))
            .replace("FUNCTION", function))


def _submit(code: str):
    episode = get_suite("tpbench").episode(PROBLEM)
    result = episode.view().call("submit", {"solution": f"```python\n{code}\n```\n"})
    assert not result.is_error, result.text
    return episode.record(agent="hostile")


def test_the_cheat_works_where_nothing_stops_it(monkeypatch):
    """The attack is real: at rlimits-only, run without the task's minimum, the stolen
    reference gives every expected output."""
    from discoverygym.suites.tpbench import verifier
    from discoverygym.suites.tpbench.problem import load_problem

    monkeypatch.setenv(LEVEL_ENV, "rlimits-only")
    problem = load_problem(paths.package_dir() / "suites/tpbench/problems"
                           / f"{PROBLEM}.yaml")
    inputs, expected = verifier.reference_outputs(problem)
    outcome = verifier.run_function(_cheat(), problem.function, inputs, time_limit_s=30,
                                    memory_mb=2048, minimum_isolation=None)
    assert outcome.failure is None and outcome.isolation == "rlimits-only"
    assert [v for _, v in outcome.results] == pytest.approx(expected)


def test_an_answer_cannot_read_the_reference_at_any_level(level):
    record = _submit(_cheat())
    assert not record.passed and record.score == 0
    assert record.details["isolation"] == level
    if level in SCORED:
        assert record.details["verdict"] == "error"
        assert "no reference readable" in record.error
    else:  # below the minimum: nothing ran, the record says why
        assert record.details["verdict"] == "refused"
        assert f"below this task's minimum {MINIMUM_ISOLATION!r}" in record.error


def test_the_levels_and_their_order():
    assert LEVELS == ("bubblewrap", "unshare", "rlimits-uid", "rlimits-only")
    assert [strength(lvl) for lvl in LEVELS] == [4, 3, 2, 1] and strength("?") == 0
    assert meets("unshare", "rlimits-uid") and not meets("rlimits-only", "rlimits-uid")
    assert "rlimits-only" in WORKING
    if os.geteuid() == 0:  # every root host with ACLs has the uid level
        assert "rlimits-uid" in WORKING


def test_below_the_minimum_nothing_runs(tmp_path, monkeypatch):
    monkeypatch.setenv(LEVEL_ENV, "rlimits-only")
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable) as info:
        run_isolated(f"open({str(marker)!r}, 'w')",
                     config=SandboxConfig(minimum_isolation="rlimits-uid"))
    assert info.value.level == "rlimits-only" and not marker.exists()
    from discoverygym.suites.mad.law_check import LawFunctionError, run_law_function

    with pytest.raises(LawFunctionError, match="below this task's minimum"):
        run_law_function("def law(x):\n    return [x]", "law", [{"x": 1.0}])


# ---- the Harbor verifier: the reward is written last, where the answer cannot -------------
# The forger is the Harbor audit's own script (DETACH_AND_FORGE): when the answer is
# loaded it leaves a process behind that rewrites the reward after scoring.


def _harbor_root(tmp_path: Path, code: str) -> tuple[dict, Path, Path]:
    """A Harbor trial's folders holding a written answer that runs `code` when loaded."""
    root, logs = tmp_path / "root", tmp_path / "logs"
    (root / "app").mkdir(parents=True)
    spec = EpisodeSpec("tpbench", PROBLEM, 0, {})
    answer = get_suite("tpbench").audit_code_answer(spec, code)
    (root / "app" / "answer.json").write_text(json.dumps(answer))
    logs.mkdir()
    os.chmod(logs, 0o777)  # how Harbor may hand it over
    conf = {"spec": spec.to_dict(), "answer": "/app/answer.json", "outputs": [],
            "logs": str(logs)}
    return conf, root, logs


def test_a_detached_process_cannot_rewrite_the_reward(level, open_tmp):
    tmp_path = open_tmp
    code = DETACH_AND_FORGE.replace("LOGS", repr(str(tmp_path / "logs")))
    conf, root, logs = _harbor_root(tmp_path, code)
    record = score(conf, root=root)
    time.sleep(2.5)  # past the forger's wake-up
    reward = json.loads((logs / "reward.json").read_text())
    assert "FORGED" not in reward and reward["reward"] == 0.0
    assert reward["isolation_strength"] == strength(level)
    saved = json.loads((logs / "record.json").read_text())
    assert saved["details"]["isolation"] == level and not saved["passed"]
    assert stat.S_IMODE(os.stat(logs).st_mode) & 0o022 == 0
    if level not in SCORED:
        assert "below this task's minimum" in record.error


def test_the_forger_would_succeed_without_the_defences(open_tmp, monkeypatch):
    """A process the answer detaches at rlimits-only outlives the run and writes into an
    open folder: why that level is below tpbench's minimum."""
    monkeypatch.setenv(LEVEL_ENV, "rlimits-only")
    logs = open_tmp / "logs"
    logs.mkdir()
    os.chmod(logs, 0o777)
    code = DETACH_AND_FORGE.replace("LOGS", repr(str(logs)))
    run_isolated(code, config=SandboxConfig(preload={}))
    time.sleep(2.5)
    assert "FORGED" in (logs / "reward.json").read_text()


@needs_root
def test_the_closed_verifier_folder_refuses_another_uid(open_tmp):
    logs = open_tmp / "logs"
    logs.mkdir()
    os.chmod(logs, 0o777)
    write = ["/bin/sh", "-c", f"echo 1 > {logs / 'reward.json'}"]
    other = {"user": 65534, "group": 65534, "extra_groups": [], "capture_output": True}
    assert subprocess.run(write, **other).returncode == 0  # open: anyone writes
    (logs / "reward.json").unlink()
    close_logs(logs)
    assert subprocess.run(write, **other).returncode != 0
    assert not (logs / "reward.json").exists()


# ---- no inherited descriptors; logs read with a bound ----------------------------------
# LIST_FDS and host_files are the sandbox audit's own: the script prints each descriptor
# and what it names, host_files keeps those that name a file of the host's.


def test_the_interpreter_holds_no_host_file_and_its_log_is_bounded(level):
    with Interpreter(config=SandboxConfig(time_limit_s=30)) as py:
        listing = py.execute(LIST_FDS).stdout
        assert host_files(listing) == [], listing
        # write 64 MiB on every descriptor beyond the interpreter's own (before: fd 5
        # and 6 were the host's sandbox.log)
        flood = py.execute("""
import os
chunk = b"x" * (1 << 20)
for fd in map(int, os.listdir("/proc/self/fd")):
    if fd > 4:
        try:
            for _ in range(64):
                os.write(fd, chunk)
        except OSError:
            pass
print("done")
""")
        assert "done" in flood.stdout or flood.restarted
        root = py._layout.root
        on_disk = sum(f.stat().st_size for f in root.rglob("*") if f.is_file()
                      and not f.is_symlink() and f.parent.name not in ("home", "tmp"))
        assert on_disk < 1 << 20
        assert len(py._log_tail(10**9)) <= 64 * 1024
        assert py.execute("print(1 + 1)").stdout.strip() == "2"


def test_a_one_shot_run_holds_no_host_file_and_its_output_is_bounded(level):
    result = run_isolated(LIST_FDS, config=SandboxConfig(preload={}))
    assert result.isolation == level
    assert host_files(result.stdout.decode()) == [], result.stdout
    started = time.monotonic()
    flood = run_isolated("import os\nchunk = b'y' * (1 << 20)\n"
                         "for _ in range(200):\n    os.write(1, chunk)\n    os.write(2, chunk)\n",
                         config=SandboxConfig(preload={}, output_limit_chars=1000,
                                              time_limit_s=60))
    assert time.monotonic() - started < 60 and not flood.timed_out
    # the first 1000 bytes are kept; past file_size_mb (64 MiB, what a file could hold)
    # the host closes the stream and the flood's next write fails
    assert flood.stdout.startswith(b"y" * 1000) and len(flood.stdout) < 1100
    assert b"the stream was closed after" in flood.stdout
    assert flood.returncode != 0 and b"BrokenPipeError" not in flood.stdout
    assert len(flood.stderr) < 1100


def test_stdin_reaches_the_script_through_a_pipe(level):
    data = b"z" * (3 << 20)  # more than a pipe holds: written while the script reads
    result = run_isolated("import sys\nprint(len(sys.stdin.buffer.read()))",
                          stdin=data, config=SandboxConfig(preload={}))
    assert result.stdout.strip() == str(len(data)).encode()


# ---- the seal of the uid level ---------------------------------------------------------
@needs_root
def test_the_seal_denies_one_uid_and_leaves_no_trace(open_tmp):
    tmp_path = open_tmp
    tree = tmp_path / "checkout"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "truth.yaml").write_text("secret")
    (tree / "venv" / "bin").mkdir(parents=True)
    closed = tmp_path / "closed"  # a 0700 folder on the way to what is needed
    (closed / "python").mkdir(parents=True)
    os.chmod(closed, 0o700)
    before = {p: os.stat(p).st_mode for p in (tree, tree / "src", closed)}
    targets = seal.deny_targets([str(tree)], [str(tree / "venv" / "bin")])
    assert targets == [str(tree / "src")]  # the way to the venv stays open
    entries = seal.traverse_grants([str(closed / "python")])
    assert entries == {str(closed): seal.TRAVERSE}
    entries.update(dict.fromkeys(targets, seal.DENY))
    uid = 259_998
    # (a program every uid can run: the venv's interpreter may lie under a 0700 /root)
    read = ["/bin/cat", str(tree / "src" / "truth.yaml")]
    reach = ["/bin/ls", str(closed / "python")]
    as_uid = {"user": uid, "group": uid, "extra_groups": [], "capture_output": True}
    assert subprocess.run(read, **as_uid).returncode == 0
    assert subprocess.run(reach, **as_uid).returncode != 0
    seal.seal(entries, uid)
    try:
        assert seal.denied(str(tree / "src"), uid)
        assert subprocess.run(read, **as_uid).returncode != 0
        assert subprocess.run(reach, **as_uid).returncode == 0
        as_other = {**as_uid, "user": uid + 1, "group": uid + 1}
        assert subprocess.run(read, **as_other).returncode == 0  # other uids unchanged
        assert subprocess.run(reach, **as_other).returncode != 0
    finally:
        seal.unseal(list(entries), uid)
    assert {p: os.stat(p).st_mode for p in before} == before
    assert all(seal.ACL_XATTR not in os.listxattr(p) for p in before)


@needs_root
@pytest.mark.skipif("rlimits-uid" not in WORKING, reason="no uid level here")
def test_every_process_of_a_uid_run_is_gone_when_it_returns(monkeypatch):
    monkeypatch.setenv(LEVEL_ENV, "rlimits-uid")
    result = run_isolated("import os, subprocess, sys\n"
                          "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
                          " start_new_session=True)\nprint(os.getuid())",
                          config=SandboxConfig(preload={}))
    uid = int(result.stdout.split()[0])
    assert uid != os.getuid() and processes_of_uid(uid) == []


@needs_root
@pytest.mark.skipif("rlimits-uid" not in WORKING, reason="no uid level here")
def test_the_interpreter_at_the_uid_level_cannot_read_the_package_and_unseals(monkeypatch):
    monkeypatch.setenv(LEVEL_ENV, "rlimits-uid")
    problems = paths.package_dir() / "suites" / "tpbench" / "problems"
    with Interpreter(config=SandboxConfig(time_limit_s=30)) as py:
        assert py.isolation == "rlimits-uid" and "WEAK SANDBOX" in py.isolation_warning
        out = py.execute(f"import os\ntry:\n    print(len(os.listdir({str(problems)!r})))\n"
                         "except OSError as exc:\n    print('denied', exc.errno)")
        assert out.stdout.strip() == "denied 13", out
        uid, sealed = py._layout.uid, list(py._layout.sealed)
        assert any(seal.denied(p, uid) for p in sealed)
    assert not any(seal.denied(p, uid) for p in sealed)  # lifted when it closed
