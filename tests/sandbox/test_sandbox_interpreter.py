"""The stateful sandboxed interpreter: workspace round trip, values, output capture,
truncation, time limits and restarts."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from discoverygym.sandbox import Interpreter, SandboxConfig, isolation_level, run_isolated


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame({
        "time_s": np.linspace(0.0, 1e7, 50),
        "x_m": rng.normal(0.0, 1e11, 50),
        "label": [f"obs-{i}" for i in range(50)],
        "count": np.arange(50, dtype=np.int32),
    })


@pytest.fixture(scope="module")
def py():
    workspace = {"df": _frame(), "arr": np.random.default_rng(3).normal(size=(7, 3)),
                 "note": "hello"}
    with Interpreter(workspace, SandboxConfig(time_limit_s=30)) as interp:
        yield interp


def test_strongest_level_detected():
    assert isolation_level() in ("bubblewrap", "unshare", "rlimits-only")


def test_dataframe_round_trip_is_exact(py):
    df = _frame()
    # The sandbox describes its copy as JSON text: every float as its exact hex form.
    code = (
        "import json\n"
        "json.dumps({'columns': list(df.columns), 'dtypes': [str(t) for t in df.dtypes],"
        " 'index': df.index.tolist(),"
        " 'time_s': [float(v).hex() for v in df.time_s], 'x_m': [float(v).hex() for v in df.x_m],"
        " 'label': df.label.tolist(), 'count': df['count'].tolist(),"
        " 'arr': [float(v).hex() for v in arr.ravel()], 'arr_shape': list(arr.shape)})"
    )
    result = py.execute(code)
    assert result.error is None, result.error
    seen = json.loads(eval(result.value))  # the value is the repr of a str
    assert seen["columns"] == list(df.columns)
    assert seen["dtypes"] == [str(t) for t in df.dtypes]
    assert seen["index"] == df.index.tolist()
    assert seen["time_s"] == [float(v).hex() for v in df.time_s]
    assert seen["x_m"] == [float(v).hex() for v in df.x_m]
    assert seen["label"] == df.label.tolist()
    assert seen["count"] == df["count"].tolist()
    arr = np.random.default_rng(3).normal(size=(7, 3))
    assert seen["arr"] == [float(v).hex() for v in arr.ravel()]
    assert seen["arr_shape"] == [7, 3]


def test_last_expression_value_and_state(py):
    assert py.execute("z = 21").value is None
    assert py.execute("z * 2").value == "42"
    assert py.execute("note.upper()").value == "'HELLO'"
    assert py.execute("None").value is None
    result = py.execute("print('a'); import sys; print('b', file=sys.stderr); z + 1")
    assert result.stdout == "a\n" and result.stderr == "b\n" and result.value == "22"


def test_errors_come_back_as_traceback_text(py):
    result = py.execute("def f():\n    return 1 / 0\nf()")
    assert "ZeroDivisionError" in result.error and "<cell>" in result.error
    assert "_bootstrap" not in result.error
    syntax = py.execute("def (:")
    assert "SyntaxError" in syntax.error
    assert py.execute("raise SystemExit(3)").error.strip().endswith("SystemExit: 3")
    assert py.execute("z").value == "21"  # still alive, state kept


def test_libraries_importable(py):
    code = "import scipy, sympy, astropy, pandas, numpy; sympy.integrate(sympy.Symbol('x')**2)"
    result = py.execute(code)
    assert result.error is None, result.error
    assert result.value == "x**3/3"


def test_subprocess_output_is_captured(py):
    result = py.execute("import os; os.system('echo from-shell')")
    assert "from-shell" in result.stdout


def test_update_workspace(py):
    py.update_workspace({"df": _frame().iloc[:3], "extra": 5})
    assert py.execute("len(df), extra").value == "(3, 5)"


def test_output_truncated():
    config = SandboxConfig(output_limit_chars=1000)
    with Interpreter({}, config) as small:
        result = small.execute("print('x' * 100000)\n'y' * 5000")
    assert len(result.stdout) < 1200 and "truncated" in result.stdout
    assert len(result.value) < 1200 and "truncated" in result.value


def test_timeout_restarts_with_workspace_restored():
    config = SandboxConfig(time_limit_s=2.0)
    with Interpreter({"keep": 7}, config) as interp:
        assert interp.execute("mine = 1\nkeep").value == "7"
        result = interp.execute("while True:\n    pass")
        assert result.timed_out and result.restarted
        assert "restarted" in result.notice and "restored" in result.notice
        assert interp.execute("keep").value == "7"
        assert "NameError" in interp.execute("mine").error
        assert interp.restarts == 1 and interp.events[0]["event"] == "timeout"


def test_run_isolated_basics():
    script = ("import sys, pathlib\n"
              "data = sys.stdin.read()\n"
              "print(data.upper(), pathlib.Path('input.txt').read_text())\n"
              "sys.exit(3)\n")
    result = run_isolated(script, stdin=b"abc", files={"input.txt": b"file-content"})
    assert result.returncode == 3
    assert result.stdout == b"ABC file-content\n"
    assert not result.timed_out and result.killed_reason is None


def test_run_isolated_timeout_and_truncation():
    result = run_isolated("while True:\n    pass", config=SandboxConfig(time_limit_s=1.5))
    assert result.timed_out and result.killed_reason == "timeout" and result.returncode is None
    loud = run_isolated("print('z' * 10**6)", config=SandboxConfig(output_limit_chars=500))
    assert loud.returncode == 0 and len(loud.stdout) < 600 and b"truncated" in loud.stdout


def test_interpreter_outlives_the_thread_that_started_it():
    """Front-ends start interpreters in worker threads that may exit (anyio's pool);
    bubblewrap's --die-with-parent must not kill the sandbox with that thread."""
    import threading

    box = {}
    starter = threading.Thread(target=lambda: box.setdefault("py", Interpreter({"x": 1})))
    starter.start()
    starter.join()
    with box["py"] as interp:
        result = interp.execute("x + 1")
        assert result.value == "2" and not result.restarted, result.notice
        assert interp.restarts == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to a sandbox uid needs root")
def test_kill_uid_reaches_every_process_of_that_uid_and_no_other():
    import subprocess

    from discoverygym.sandbox.isolation import kill_uid, processes_of_uid

    uid = 259_999
    sleepers = [subprocess.Popen(["sleep", "60"], user=uid, group=uid, extra_groups=[],
                                 start_new_session=True) for _ in range(3)]
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        assert len(processes_of_uid(uid)) == 3
        kill_uid(uid, wait_s=0.2)  # our own children stay zombies until we reap them
        for p in sleepers:
            assert p.wait(timeout=10) == -9
        assert not processes_of_uid(uid)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        for p in sleepers:
            p.kill()



_ON_DESCRIPTOR = """
import os, sys
from discoverygym.sandbox import Interpreter
lowest = int(sys.argv[1])
held = []
while (fd := os.open(os.devnull, os.O_RDONLY)) < lowest:
    held.append(fd)
os.close(fd)
if any(os.path.exists(f"/proc/self/fd/{n}") for n in range(lowest, lowest + 4)):
    sys.exit("descriptors taken")
with Interpreter({"x": 1}) as interp:
    print(interp.execute("x + 1").value)
"""


@pytest.mark.parametrize("lowest", [6, 9])
def test_interpreter_starts_when_its_pipes_land_on_descriptor_9(lowest):
    """Before: the bubblewrap launch hands bwrap its options on descriptor 9 (`9<file`),
    which replaced a protocol pipe that landed there, and the interpreter died at start
    ('Bad file descriptor' inside). That happens in a process with a few descriptors
    more than a bare one (an event loop's); a fresh process makes its pipes land on 9,
    as the reply pipe's write end (lowest free 6) or the command pipe's read end (9)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _ON_DESCRIPTOR, str(lowest)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split()[-1:] == ["2"], done.stderr[-1500:]
