"""A cheating agent's attempts from inside the sandbox. Each must fail or be stopped,
and the host must be unharmed. Runs at the strongest level this host allows, and at
`unshare` too when that works here."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from discoverygym.core import paths
from discoverygym.sandbox import Interpreter, SandboxConfig, isolation_level, run_isolated
from discoverygym.sandbox.isolation import _level_works, processes_of_uid

STRONG = [lvl for lvl in ("bubblewrap", "unshare")
          if _level_works(lvl, __import__("sys").executable)]
FAKE_KEY = "sk-test-FAKE-KEY-must-not-leak-1234567890"
SECRET = "TRUTH-period_days=12.3456789"

pytestmark = pytest.mark.skipif(not STRONG, reason="no namespace isolation on this host; "
                                "the rlimits-only level cannot hide files or the network")


@pytest.fixture(scope="module", params=STRONG)
def attack_env(request, tmp_path_factory):
    """A host with secrets in the cache and a run directory, a fake API key in the
    environment, and an interpreter started under those conditions."""
    mp = pytest.MonkeyPatch()
    work = tmp_path_factory.mktemp("host")
    mp.setenv("OPENAI_API_KEY", FAKE_KEY)
    mp.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    secret_cache = paths.cache_dir("gravity", "worlds") / "truth.json"
    secret_cache.write_text(SECRET)
    (work / "runs" / "gravity-x").mkdir(parents=True)
    (work / "runs" / "gravity-x" / "records.jsonl").write_text(SECRET)
    extra = work / "private"
    extra.mkdir()
    (extra / "answers.txt").write_text(SECRET)
    mp.chdir(work)
    config = SandboxConfig(time_limit_s=3.0, isolation=request.param,
                           hidden_paths=(str(extra),))
    interp = Interpreter({"x": 1}, config)
    yield {"py": interp, "cache_file": secret_cache, "run_dir": work / "runs",
           "extra": extra, "level": request.param}
    interp.close()
    mp.undo()


def _attempt(py, code):
    result = py.execute(code)
    return (result.value or "") + result.stdout + (result.error or "") + result.stderr


def test_isolation_level_reported(attack_env):
    assert attack_env["py"].isolation == attack_env["level"]
    assert attack_env["py"].isolation_warning is None


def test_cannot_read_cache(attack_env):
    py = attack_env["py"]
    cache = attack_env["cache_file"]
    out = _attempt(py, f"open({str(cache)!r}).read()")
    assert SECRET not in out and ("FileNotFoundError" in out or "PermissionError" in out)
    out = _attempt(py, f"import os; os.path.exists({str(paths.cache_root())!r})")
    assert out.strip() == "False"


def test_cannot_read_run_directory(attack_env):
    py = attack_env["py"]
    out = _attempt(py, f"import os; os.listdir({str(attack_env['run_dir'])!r})")
    assert "FileNotFoundError" in out and SECRET not in out
    out = _attempt(py, f"open({str(attack_env['extra'] / 'answers.txt')!r}).read()")
    assert "FileNotFoundError" in out and SECRET not in out
    out = _attempt(py, "import os; os.listdir('runs') if os.path.exists('runs') else 'none'")
    assert "'none'" in out


def test_cannot_import_package_or_read_source(attack_env):
    py = attack_env["py"]
    out = _attempt(py, "import discoverygym")
    assert "ModuleNotFoundError" in out
    src = paths.package_dir()
    out = _attempt(py, f"import os; os.listdir({str(src)!r})")
    assert "FileNotFoundError" in out
    # The editable install's .pth points at the checkout; it must lead nowhere.
    out = _attempt(py, "import sys; [p for p in sys.path if 'src' in p.split('/')]")
    assert out.strip() == "[]"
    out = _attempt(py, "import os; sorted(os.listdir(os.path.dirname(os.__file__)))[:1] and "
                       f"os.path.exists({str(src.parent.parent / 'pyproject.toml')!r})")
    assert out.strip() == "False"


def test_no_api_keys_in_environment(attack_env):
    py = attack_env["py"]
    out = _attempt(py, "import os; sorted(os.environ)")
    assert "OPENAI_API_KEY" not in out and "ANTHROPIC" not in out
    code = ("import glob\nfound = []\n"
            "for path in glob.glob('/proc/*/environ'):\n"
            "    try:\n        found.append(open(path, 'rb').read())\n"
            "    except OSError:\n        pass\n"
            "any(b'FAKE-KEY' in e for e in found), len(found) > 0")
    assert _attempt(py, code).strip() == "(False, True)"
    assert os.environ["OPENAI_API_KEY"] == FAKE_KEY  # the host still has it


def test_no_network(attack_env):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    try:
        out = _attempt(attack_env["py"], "import socket\n"
                       f"s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                       "'connected'")
        server.setblocking(False)
        with pytest.raises(BlockingIOError):  # nobody knocked
            server.accept()
    finally:
        server.close()
    assert "connected" not in out and ("Error" in out)
    out = _attempt(attack_env["py"], "import socket; socket.getaddrinfo('example.com', 443)")
    assert "gaierror" in out


def _strongest_only(attack_env) -> None:
    # The slow attacks (each costs a restart) run once, at the level in use by default.
    if attack_env["level"] != STRONG[0]:
        pytest.skip("slow attack checked at the strongest level only")


def test_fork_bomb_is_bounded(attack_env):
    _strongest_only(attack_env)
    py = attack_env["py"]
    bomb = ("import os, time\nn = 0\ntry:\n    for _ in range(100000):\n"
            "        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n"
            "        n += 1\nexcept OSError as exc:\n    stopped = type(exc).__name__\nn, stopped")
    out = _attempt(py, bomb)
    forked = int(out.strip("()\n").split(",")[0])
    assert forked < 100, out
    # A fork loop with no end is stopped by the time limit; the sandbox restarts.
    loop = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = py.execute(loop)
    assert result.restarted
    assert py.execute("x").value == "1"
    uid = py.sandbox_uid
    if os.geteuid() == 0 and uid:
        py.close()  # nothing of the old sandbox's uid may remain (the host is clean)
        assert not processes_of_uid(uid)


def test_memory_bomb_fails(attack_env):
    py = attack_env["py"]
    if py._closed:  # the fork test closed it on root hosts
        py = attack_env["py"] = Interpreter({"x": 1}, py.config)
    out = _attempt(py, "import numpy as np\na = np.ones(50 * 1024**3 // 8)")
    assert "MemoryError" in out or "_ArrayMemoryError" in out
    out = _attempt(py, "b = bytearray(50 * 10**9)")
    assert "MemoryError" in out
    assert py.execute("x + 1").value == "2"


def test_infinite_loop_is_stopped(attack_env):
    _strongest_only(attack_env)
    py = attack_env["py"]
    if py._closed:
        py = attack_env["py"] = Interpreter({"x": 1}, py.config)
    result = py.execute("while True:\n    pass")
    assert result.timed_out and result.restarted and "restarted" in result.notice
    assert py.execute("x").value == "1"


def test_cannot_write_outside_private_dirs(attack_env):
    py = attack_env["py"]
    if py._closed:
        py = attack_env["py"] = Interpreter({"x": 1}, py.config)
    import numpy

    target = Path(numpy.__file__).parent / "pwned.txt"
    out = _attempt(py, f"open({str(target)!r}, 'w').write('x')")
    assert "Error" in out and not target.exists()
    assert py.execute("open('mine.txt', 'w').write('ok')").value == "2"


def test_run_isolated_attacks(attack_env):
    config = SandboxConfig(isolation=attack_env["level"], time_limit_s=10)
    script = ("import os\n"
              "print('key' if 'OPENAI_API_KEY' in os.environ else 'nokey')\n"
              f"print(os.path.exists({str(attack_env['cache_file'])!r}))\n"
              "import discoverygym\n")
    result = run_isolated(script, config=config)
    assert result.stdout == b"nokey\nFalse\n"
    assert b"ModuleNotFoundError" in result.stderr and result.returncode == 1


@pytest.mark.filterwarnings("ignore:WEAK SANDBOX")
def test_weak_level_is_loud():
    result = run_isolated("print(1)", config=SandboxConfig(isolation="rlimits-only"))
    assert result.isolation == "rlimits-only" and result.stdout == b"1\n"
    from discoverygym.sandbox import weak_warning

    assert "WEAK SANDBOX" in weak_warning("rlimits-only")
    assert isolation_level() in STRONG


def test_an_interpreter_named_through_dotdot_keeps_the_strong_level(tmp_path):
    """`../.venv/bin/python` (a script started from tests/) used to fail the bubblewrap
    probe and fall to the weak level."""
    import sys

    # through a folder the sandbox does not show (its /tmp is private)
    python = str(tmp_path) + "/.." * (len(tmp_path.parts) - 1) + os.path.abspath(sys.executable)
    assert os.path.samefile(python, sys.executable)
    assert isolation_level(python) == isolation_level()
    result = run_isolated("import sys; print(sys.prefix)", config=SandboxConfig(python=python))
    assert result.isolation in STRONG and result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == sys.prefix


@pytest.mark.parametrize("level", STRONG)
def test_an_interpreter_under_tmp_still_works(level, tmp_path):
    """The sandbox's private /tmp must not cover an interpreter (a venv, a CI checkout)
    that lives under the host's /tmp; that used to drop a fresh clone in /tmp to the
    weak level."""
    import subprocess
    import sys

    from discoverygym.sandbox.isolation import Layout, sandbox_command

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    assert python.startswith("/tmp/")
    config = SandboxConfig(python=python)
    layout = Layout.create(level, config)
    try:
        cmd, _, env = sandbox_command(level, config, layout, [
            python, "-I", "-c", "import os, sys; print(sys.prefix, sorted(os.listdir('/tmp')))"])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    finally:
        layout.cleanup()
    assert done.returncode == 0, done.stderr
    prefix = done.stdout.split()[0]
    assert prefix == str(venv)
    # the host's /tmp is not visible: only the path down to the venv exists there
    assert done.stdout.split(maxsplit=1)[1].strip() == repr([tmp_path.parts[2]])
