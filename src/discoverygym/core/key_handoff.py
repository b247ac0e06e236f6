"""Keep the key file's path off the command line of a running `discoverygym`.

Every process's command line is public on Linux (`/proc/PID/cmdline` is readable by
any user). A sandbox without namespaces (`rlimits-uid`) runs agent code as a uid of
its own on the host's process table, so an agent's python tool could read the MCP
server's command line, find `--key-file PATH` and try that path. So, before any
sandboxed work starts, the entry point reads the key files named on its command line
and re-executes itself (same process id, same standard streams) with each path
replaced by `/dev/fd/N`: N is an inherited pipe that carries the keys, read and closed
at the start of the new image. The new command line names no file, and the paths the
keys came from are remembered in this process only, to be sealed from every sandbox
(`keys.key_files_read`).

Environment variables (DISCOVERYGYM_KEY, DISCOVERYGYM_KEY_FILE) are left as they are:
the kernel shows `/proc/PID/environ` only to the same user, and every sandbox gets an
environment built from an allow-list.
"""

from __future__ import annotations

import json
import os
import stat
import sys

from . import keys

#: Names the inherited pipe in the re-executed process.
HANDOFF_FD_ENV = "DISCOVERYGYM_KEY_FD"
_OPTION = "--key-file"


def _key_file_values(args: list[str]) -> list[tuple[int, str, str]]:
    """(index in args, form, value) of each `--key-file V` / `--key-file=V`."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == _OPTION and i + 1 < len(args):
            found.append((i + 1, "separate", args[i + 1]))
        elif arg.startswith(_OPTION + "="):
            found.append((i, "joined", arg[len(_OPTION) + 1:]))
    return found


def receive() -> None:
    """In the re-executed image: read the keys off the inherited pipe, once."""
    fd_text = os.environ.pop(HANDOFF_FD_ENV, None)
    if not fd_text:
        return
    try:
        fd = int(fd_text)
        if fd < 3 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return  # not the pipe a hand-off leaves (a stray variable): never stdin
        # Ours is written whole and closed before the exec: it never blocks. Any other
        # pipe would, so it is read without blocking and then left alone.
        os.set_blocking(fd, False)
        with os.fdopen(fd, "rb") as pipe:
            payload = json.loads(pipe.read(1 << 16))
    except (ValueError, OSError, TypeError):
        return  # not ours to read: the command then reads its options as given
    for token, (secret_hex, path) in payload.items():
        keys._HANDED[token] = keys.Key(bytes.fromhex(secret_hex))
        keys.remember_key_file(path)


def hand_off(argv: list[str] | None = None) -> None:
    """Re-execute this process with every `--key-file PATH` replaced by an inherited
    pipe (see the module's docstring); a no-op without one, in the re-executed image,
    or when a key cannot be read (the command then reports that in its own words)."""
    if HANDOFF_FD_ENV in os.environ:
        receive()
        return
    argv = list(sys.argv if argv is None else argv)
    found = _key_file_values(argv[1:])
    if not found:
        return
    # The program's arguments must be the tail of the interpreter's own command line
    # (sys.orig_argv), or the new image could not be started the same way.
    tail = len(argv) - 1
    if list(sys.orig_argv[len(sys.orig_argv) - tail:]) != argv[1:]:
        return
    try:
        read = {value: keys.read_key_file(value) for _, _, value in found}
    except keys.BadKey:
        return
    read_fd, write_fd = os.pipe()
    tokens = {value: f"/dev/fd/{read_fd}" if len(read) == 1 else f"/dev/fd/{read_fd}:{n}"
              for n, value in enumerate(read)}
    payload = {tokens[v]: (k.hex(), os.path.abspath(v)) for v, k in read.items()}
    os.write(write_fd, json.dumps(payload).encode())  # far below a pipe's buffer
    os.close(write_fd)
    os.set_inheritable(read_fd, True)
    args = argv[1:]
    for index, form, value in found:
        args[index] = tokens[value] if form == "separate" else f"{_OPTION}={tokens[value]}"
    # sys.orig_argv holds the interpreter's own options (-m discoverygym, -I, ...)
    # before the program's arguments, which are the tail it shares with sys.argv.
    head = sys.orig_argv[:len(sys.orig_argv) - tail]
    os.environ[HANDOFF_FD_ENV] = str(read_fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *head[1:], *args])
