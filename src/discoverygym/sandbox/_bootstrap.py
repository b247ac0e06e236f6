"""The interpreter loop that runs inside the sandbox.

Protocol with the host: frames of a 4-byte big-endian length and a payload. The host
sends JSON commands on one pipe (a workspace update is followed by one pickle frame:
host -> sandbox only, the host is trusted); the sandbox answers JSON on another. The
host never unpickles anything that comes from here. Imports nothing from
discoverygym (not visible in the sandbox)."""

import ast
import builtins
import json
import os
import pickle
import struct
import sys
import tempfile
import time
import traceback

CMD_FD, REPLY_FD = 3, 4  # replaced by the numbers the host passes in the settings
OWNER_PID = os.getpid()


def read_exact(n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(CMD_FD, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv() -> bytes:
    (n,) = struct.unpack(">I", read_exact(4))
    return read_exact(n)


def send(obj: dict) -> None:
    data = json.dumps(obj).encode()
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(REPLY_FD, data):]


def clip(text: str, limit: int) -> str:
    """Keep the head and the tail of long output and say how much was cut."""
    if len(text) <= limit:
        return text
    tail = limit // 5
    head = limit - tail
    cut = len(text) - head - tail
    return (text[:head] + f"\n[... {cut} characters truncated ...]\n"
            + (text[-tail:] if tail else ""))


def read_capture(fd: int, limit: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    size = os.fstat(fd).st_size
    # Never read more than needed to show head and tail.
    budget = 4 * limit + 16
    if size <= budget:
        raw = os.read(fd, size) if size else b""
        text = raw.decode("utf-8", "replace")
        return clip(text, limit)
    head = os.read(fd, 4 * limit)
    os.lseek(fd, size - limit, os.SEEK_SET)
    tail = os.read(fd, limit)
    text = head.decode("utf-8", "replace")[:limit] + tail.decode("utf-8", "replace")
    cut = size - len(head) - len(tail)
    note = f"\n[... about {cut} more bytes were not read ...]" if cut > 0 else ""
    return clip(text, limit) + note


def run_cell(code: str, ns: dict, limit: int) -> dict:
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    saved = os.dup(1), os.dup(2)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    value = error = None
    started = time.perf_counter()
    try:
        try:
            tree = ast.parse(code, "<cell>", "exec")
        except SyntaxError:
            error = "".join(traceback.format_exception_only(*sys.exc_info()[:2]))
        else:
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            try:
                exec(compile(tree, "<cell>", "exec"), ns)
                if last is not None:
                    result = eval(compile(last, "<cell>", "eval"), ns)
                    if result is not None:
                        ns["_"] = result
                        value = clip(repr(result), limit)
            except BaseException as exc:  # the agent's code may raise anything
                tb = exc.__traceback__.tb_next if exc.__traceback__ else None
                error = "".join(traceback.format_exception(type(exc), exc, tb))
                error = clip(error, limit)
    finally:
        if os.getpid() != OWNER_PID:
            # A process the agent forked got here (its copy of this loop must not
            # read the host's commands): it ends now.
            os._exit(0)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    reply = {"stdout": read_capture(out.fileno(), limit),
             "stderr": read_capture(err.fileno(), limit),
             "value": value, "error": error,
             "duration_s": time.perf_counter() - started}
    out.close()
    err.close()
    return reply


def main() -> None:
    global CMD_FD, REPLY_FD, OWNER_PID
    OWNER_PID = os.getpid()
    settings = json.loads(sys.argv[1])
    CMD_FD, REPLY_FD = int(settings["cmd_fd"]), int(settings["reply_fd"])
    # Processes the agent starts must not inherit the protocol pipes.
    os.set_inheritable(CMD_FD, False)
    os.set_inheritable(REPLY_FD, False)
    limit = int(settings["output_limit_chars"])
    ns: dict = {"__name__": "__main__", "__builtins__": builtins}
    for module, alias in settings.get("preload", {}).items():
        try:
            ns[alias] = __import__(module, fromlist=["_"])
        except ImportError:
            pass
    # Make sure python's own stdout goes through fd 1 unbuffered enough for capture.
    sys.stdout.reconfigure(line_buffering=True)
    send({"ready": True, "python": sys.version.split()[0], "uid": os.getuid(),
          "pid": os.getpid()})
    while True:
        try:
            command = json.loads(recv())
        except EOFError:
            return
        op = command.get("op")
        if op == "workspace":
            payload = recv()
            try:
                variables = pickle.loads(payload)
                ns.update(variables)
                send({"ok": True, "names": sorted(variables)})
            except Exception as exc:
                send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        elif op == "exec":
            reply = run_cell(command["code"], ns, limit)
            reply["id"] = command.get("id")
            send(reply)
        elif op == "ping":
            send({"ok": True})
        else:
            send({"ok": False, "error": f"unknown op {op!r}"})


main()
