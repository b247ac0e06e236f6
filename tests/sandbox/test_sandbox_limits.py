"""Limits that hold for the whole sandbox, not per process, played as agent code would
in its interpreter: several processes sharing one memory limit, processes and threads
left running after a call, a full home, a forged reply frame, host paths in the
sandbox's view. Runs at every namespace level this host has, with the kernel's cgroup
and with the /proc fallback."""

from __future__ import annotations

import sys

import pytest

from discoverygym.sandbox import Interpreter, SandboxConfig, supervise
from discoverygym.sandbox.isolation import _level_works, hidden_paths

STRONG = [lvl for lvl in ("bubblewrap", "unshare") if _level_works(lvl, sys.executable)]
pytestmark = pytest.mark.skipif(not STRONG, reason="no namespace isolation on this host")


@pytest.fixture(params=[(lvl, mech) for lvl in STRONG for mech in ("cgroup", "proc")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def make(request, monkeypatch):
    level, mechanism = request.param
    if mechanism == "proc":
        monkeypatch.setattr(supervise, "_CGROUP_PARENT", None)
    elif supervise.cgroup_parent() is None:
        pytest.skip("no writable cgroup v2 here")
    made: list[Interpreter] = []

    def build(**limits) -> Interpreter:
        it = Interpreter(config=SandboxConfig(isolation=level, time_limit_s=30, **limits))
        made.append(it)
        return it
    yield build
    for it in made:
        it.close()


def test_memory_is_limited_for_all_processes_together(make):
    """Before: three children reached 4.9 GiB under a 2 GiB limit (it was per process)."""
    it = make(memory_mb=1024, total_memory_mb=500)
    result = it.execute("""
import subprocess, sys, time
child = ("b = bytearray(250 * 1024 * 1024)\\n"
         "b[::4096] = bytes(len(range(0, len(b), 4096)))\\n"
         "import time; time.sleep(60)")
procs = [subprocess.Popen([sys.executable, "-c", child]) for _ in range(3)]
time.sleep(20)
print("all three survived")
""")
    assert result.restarted and "over its 500 MiB limit" in result.error
    assert "all three survived" not in result.stdout
    assert it.execute("print(1 + 1)").stdout.strip() == "2"  # the episode goes on


def test_nothing_keeps_running_after_a_call(make):
    """Before: detached background processes kept burning CPU after the cell returned."""
    it = make()
    started = it.execute("""
import subprocess, sys
p = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
p.pid
""")
    assert "were stopped" in (started.notice or "")
    pid = int(started.value)
    check = it.execute(f"""
import os
try:
    os.kill({pid}, 0)
    print("alive")
except ProcessLookupError:
    print("gone")
""")
    # a zombie may linger until its parent reaps it; it no longer runs
    assert check.stdout.strip() == "gone" or _zombie_inside(it, pid)


def _zombie_inside(it: Interpreter, pid: int) -> bool:
    state = it.execute(f"print(open('/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0])")
    return state.stdout.strip() == "Z"


def test_a_thread_left_running_is_frozen_between_calls(make):
    it = make()
    it.execute("""
import threading, time
ticks = [0]
def spin():
    while True:
        ticks[0] += 1
        time.sleep(0.001)
threading.Thread(target=spin, daemon=True).start()
time.sleep(0.05)
""")
    before = int(it.execute("ticks[0]").value)
    import time
    time.sleep(1.0)  # between calls: the thread must not run
    after = int(it.execute("ticks[0]").value)
    assert after - before < 200  # ~1000 if it had run for the second


def test_the_writable_area_is_bounded(make):
    """Before: 1 GiB was written to the agent's home with no quota."""
    it = make(writable_mb=16)
    result = it.execute("""
with open("big.bin", "wb") as fh:
    for _ in range(40):
        fh.write(bytes(1024 * 1024))
""")
    assert "No space left on device" in (result.error or "")
    tmp = it.execute("open('/tmp/big.bin', 'wb').write(bytes(40 * 1024 * 1024))")
    assert "No space left on device" in (tmp.error or "")


@pytest.mark.parametrize("level", STRONG)
def test_a_one_shot_script_cannot_fill_the_host_disk(level, monkeypatch):
    """Before: a one-shot run (tpbench answers, mad laws) had its home bound from the
    host, so a script could write file after file there until the time limit. Now its
    home is the same sized tmpfs as the interpreter's, with the script bound read-only."""
    from discoverygym.sandbox import isolation, oneshot

    left_on_host = []
    real_cleanup = isolation.Layout.cleanup

    def cleanup(layout):
        left_on_host.append(sorted(p.name for p in layout.home.iterdir()))
        real_cleanup(layout)
    monkeypatch.setattr(isolation.Layout, "cleanup", cleanup)
    script = """
import os
written = 0
try:
    for i in range(64):
        with open(f"f{i}.bin", "wb") as fh:
            fh.write(bytes(1024 * 1024))
        written += 1
except OSError as exc:
    print("stopped", written, exc.errno)
try:
    open("main.py", "a").write("# changed")
except OSError as exc:
    print("main.py", exc.errno)
sizes = sum(os.path.getsize(n) for n in os.listdir("."))
print("sizes", sizes)
"""
    result = oneshot.run_isolated(script, config=SandboxConfig(
        isolation=level, writable_mb=8, file_size_mb=4, time_limit_s=30))
    out = result.stdout.decode()
    assert "stopped" in out and " 28" in out.split("stopped", 1)[1].splitlines()[0], out
    assert "main.py 30" in out, out  # read-only file system
    assert left_on_host == [["main.py"]]


def test_a_forged_reply_frame_is_dropped(make):
    """Before: agent code that wrote a reply frame onto the channel made every later
    call return the previous call's output."""
    it = make()
    forged = it.execute("""
import json, os, struct
frame = json.dumps({"stdout": "FORGED\\n", "stderr": "", "value": None, "error": None})
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
            os.write(fd, struct.pack(">I", len(frame)) + frame.encode())
    except OSError:
        pass
print("real one")
""")
    assert "FORGED" not in forged.stdout and "real one" in forged.stdout
    for k in range(3):
        assert it.execute(f"print({k})").stdout.strip() == str(k)


def test_no_host_path_of_the_source_is_visible(make):
    """Before: /proc/1/cmdline listed every bind (the package source among them) and
    the editable install's .pth file named the source folder."""
    it = make()
    hidden = [h for h in hidden_paths(SandboxConfig()) if len(h) > 1]
    shown = it.execute("""
import glob, os, site
texts = [open("/proc/1/cmdline", "rb").read().decode("utf-8", "replace")]
for top in site.getsitepackages():
    for path in glob.glob(os.path.join(top, "*.pth")) + glob.glob(os.path.join(top, "__editable__*")):
        try:
            texts.append(open(path).read())
        except OSError:
            pass
print("\\n".join(texts))
""")
    assert shown.error is None
    # The interpreter is bound at its own path; when the venv lives in the checkout
    # that path names the checkout's folder (not its contents: those are masked).
    text = shown.stdout.replace(sys.prefix, "<venv>")
    assert [h for h in hidden if h in text] == []
