"""Keys made by hand are checked, key files are private, and agent code never finds the
key (issue #38, item 2).

Before: 16 zero bytes, a repeated pattern, 14 zero bytes and 2 random ones were taken
with no word (a 16-bit key was recovered from a record's key id in 0.03 s); a 0644 key
file was used silently; at `rlimits-uid` an agent's python tool read the MCP server's
/proc/PID/cmdline, found `--key-file PATH` and read the file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import numpy as np
import pytest

from discoverygym.core import keys
from discoverygym.core.key_handoff import HANDOFF_FD_ENV
from discoverygym.core.keys import (
    MIN_KEY_BITS,
    BadKey,
    key_from_environment,
    key_strength_bits,
    new_key,
    parse_key,
    read_key_file,
    write_key_file,
)
from discoverygym.sandbox import LEVELS, SandboxConfig, run_isolated
from discoverygym.sandbox.isolation import LEVEL_ENV, _level_works

WORKING = [lvl for lvl in LEVELS if _level_works(lvl, sys.executable)]
_RNG = np.random.default_rng(20261207)
WEAK = {
    "16 zero bytes": bytes(16),
    "32 equal bytes": b"a" * 32,
    "a repeated 4-byte pattern": b"abcd" * 8,
    "a repeated word": bytes.fromhex("deadbeef") * 4,
    "14 zero bytes + 2 random": bytes(14) + bytes([0x8A, 0x13]),
    "30 zero bytes + 2 random": bytes(30) + bytes([0x5C, 0xE1]),
    "a counting sequence": bytes(range(32)),
    "a pattern with one byte changed": b"\x01\x02" * 7 + b"\x01\x77" + b"\x01\x02" * 8,
    "two byte values": bytes(_RNG.integers(0, 2, 32, dtype=np.uint8)),
}


@pytest.mark.parametrize("name", sorted(WEAK))
def test_hand_made_weak_keys_are_refused_in_one_line(name):
    secret = WEAK[name]
    assert key_strength_bits(secret) < MIN_KEY_BITS
    for attempt in (lambda: parse_key(secret.hex()),
                    lambda: key_from_environment({"DISCOVERYGYM_KEY": secret.hex()})):
        with pytest.raises(BadKey) as err:
            attempt()
        assert "weak key" in str(err.value) and "\n" not in str(err.value)
        assert secret.hex() not in str(err.value)


@pytest.mark.parametrize("length", [16, 32])
def test_random_keys_always_pass(length):
    """5000 random keys of each length (`key new` makes 32 bytes) keep their full 8 bits a
    byte: the estimator charges each shape it looks for, so chance fits do not count."""
    for seed in range(5000):
        secret = np.random.default_rng(seed).bytes(length)
        assert key_strength_bits(secret) == 8 * length, seed
    key = new_key()
    assert parse_key(key.hex()) == key


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606])
def test_key_files_open_to_others_are_refused_as_ssh_does(tmp_path, mode):
    path = tmp_path / "k"
    write_key_file(path, new_key())
    os.chmod(path, mode)
    with pytest.raises(BadKey) as err:
        read_key_file(path)
    message = str(err.value)
    assert f"chmod 600 {path}" in message and "\n" not in message
    assert f"{mode:04o}" in message


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_private_key_files_are_read_and_remembered_for_the_seal(tmp_path, mode):
    path = tmp_path / "k"
    key = new_key()
    write_key_file(path, key)
    os.chmod(path, mode)
    assert read_key_file(path) == key
    assert str(path) in keys.key_files_read()


def test_a_weak_key_file_says_which_file(tmp_path):
    path = tmp_path / "k"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, bytes(16).hex().encode())
    os.close(fd)
    with pytest.raises(BadKey, match=f"key file {path}: weak key"):
        read_key_file(path)


# ---- the key file is sealed from the sandbox at every level ----------------------------------

READ = """
import sys
try:
    print(repr(open({path!r}).read()))
except OSError as exc:
    print("refused", type(exc).__name__)
"""


@pytest.fixture
def open_dir():
    """A folder every uid may traverse, with a python of its own (so at the namespace
    levels the folder is bound into the sandbox: the interpreter's folders are)."""
    path = Path(tempfile.mkdtemp(prefix="dg-keyseal-"))
    os.chmod(path, 0o755)
    os.symlink(os.path.realpath(sys.executable), path / "python")  # the base install
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("level", [lvl for lvl in WORKING if lvl != "rlimits-only"])
def test_every_key_file_read_is_sealed_from_the_sandbox(open_dir, level, monkeypatch):
    """A key file readable by any user (as if the permission check were gone), lying in a
    folder the sandbox can see: once this process has read a key from it, the sandbox
    cannot read it, at every level with a uid or namespaces. The control file beside it,
    never a key file, stays readable, so the test sees the hole when the seal is off."""
    monkeypatch.setattr(keys, "_KEY_FILES", set())
    secret = new_key().hex()
    key_file, control = open_dir / "eval.key", open_dir / "control.txt"
    for path in (key_file, control):
        path.write_text(secret)
        os.chmod(path, 0o644)
    config = SandboxConfig(isolation=level, python=str(open_dir / "python"), preload={},
                           time_limit_s=30)
    seen = run_isolated(READ.format(path=str(control)), config=config).stdout.decode()
    assert secret in seen, seen  # the folder is visible: the test can see a hole
    keys.remember_key_file(key_file)
    seen = run_isolated(READ.format(path=str(key_file)), config=config).stdout.decode()
    assert secret not in seen and ("refused" in seen or "''" in seen), seen


# ---- played through the agent's door: the MCP server's python tool --------------------------

ATTACK = """
import glob, os
found = []
for name in glob.glob('/proc/[0-9]*/cmdline') + glob.glob('/proc/[0-9]*/environ'):
    try:
        data = open(name, 'rb').read()
    except OSError:
        continue
    if PATH.encode() in data or SECRET.encode() in data:
        found.append(name)
try:
    if SECRET in open(PATH).read():
        found.append('the key file')
except OSError:
    pass
print('FOUND', found)
"""


async def _attack(server_args: list[str], env: dict[str, str], path: str,
                  secret: str) -> str:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "discoverygym", "mcp", *server_args], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            code = f"PATH = {path!r}\nSECRET = {secret!r}\n" + ATTACK
            res = await session.call_tool("python", {"code": code})
            return res.content[0].text


def _play_attack(tmp: Path, level: str | None, hand_off: bool) -> str:
    pytest.importorskip("mcp")
    key_dir = tmp / "keys"
    key_dir.mkdir()
    os.chmod(key_dir, 0o755)  # a folder any uid may enter: only the file's own mode guards
    key_file = key_dir / "eval.key"
    key = new_key()
    write_key_file(key_file, key)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCOVERYGYM_KEY")}
    if level:
        env[LEVEL_ENV] = level
    if not hand_off:
        env[HANDOFF_FD_ENV] = ""  # as if the hand-off were gone: the path stays on argv
    args = ["gravity", "period", "--world", "A", "--protocol", "budget-obs-100",
            "--record", str(tmp / "rec.json"), "--key-file", str(key_file)]
    text = anyio.run(_attack, args, env, str(key_file), key.hex())
    assert "FOUND" in text, text
    return text.split("FOUND", 1)[1]


@pytest.fixture
def open_tmp():
    path = Path(tempfile.mkdtemp(prefix="dg-keyattack-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("level", [None, *(["rlimits-uid"] if "rlimits-uid" in WORKING
                                            else [])])
def test_the_python_tool_finds_neither_key_nor_path(open_tmp, level):
    """At the default level and at rlimits-uid (the MCP server and the sandbox share the
    host's process table there), agent code scanning every /proc/PID/cmdline and
    /proc/PID/environ and opening the key file's path finds nothing."""
    found = _play_attack(open_tmp, level, hand_off=True)
    assert found.strip() == "[]", found


@pytest.mark.skipif("rlimits-uid" not in WORKING, reason="no uid level here")
def test_without_the_hand_off_the_path_shows_on_the_command_line(open_tmp):
    """The control: with the hand-off switched off, the same scan finds the path on the
    server's command line (the file itself stays shut: it is 0600 and sealed)."""
    found = _play_attack(open_tmp, "rlimits-uid", hand_off=False)
    assert "/cmdline" in found and "the key file" not in found, found


def test_the_command_line_names_no_key_file_after_the_hand_off(open_tmp):
    """An entry point that hands off re-executes itself with /dev/fd/N in place of the
    path (its own /proc/self/cmdline shows that), still holds the key, and remembers the
    path for the seal."""
    key_file = open_tmp / "k"
    key = new_key()
    write_key_file(key_file, key)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCOVERYGYM_KEY")}
    code = ("import os, sys; from discoverygym.core.key_handoff import hand_off; hand_off(); "
            "from discoverygym.core import keys; "
            "shown = open('/proc/self/cmdline', 'rb').read().split(b'\\0')[-2].decode(); "
            "print(shown, os.getpid(), keys.read_key_file(sys.argv[-1]).id, "
            "*keys.key_files_read())")
    probe = subprocess.run([sys.executable, "-c", code, "--key-file", str(key_file)],
                           env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    shown, _, key_id, *remembered = probe.stdout.split()
    assert shown.startswith("/dev/fd/") and key_id == key.id
    assert str(key_file) in remembered


def test_an_unreadable_key_is_left_to_the_command_to_report(open_tmp):
    """No hand-off when the key cannot be read: the command says why in one line."""
    key_file = open_tmp / "k"
    write_key_file(key_file, new_key())
    os.chmod(key_file, 0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DISCOVERYGYM_KEY")}
    proc = subprocess.run([sys.executable, "-m", "discoverygym", "run", "gravity", "--agent",
                           "constant", "--tasks", "period", "--worlds", "A", "--quiet",
                           "--out", str(open_tmp / "run"), "--key-file", str(key_file)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"chmod 600 {key_file}" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
