"""The audit's attacks from inside the `python` tool (interpreter_tool.py) on the
sandbox behind it: the host's API keys, the package source, a process left running, a
forged reply frame. Declared here, beside the door they come through (see
core.audit_registry)."""

from __future__ import annotations

import os
from collections.abc import Callable

from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard

FAKE_KEY = "sk-audit-FAKE-KEY-0123456789"

_FORGE_FRAME = (
    "import json, os, struct\n"
    "f = json.dumps({'stdout': 'FORGED'}).encode()\n"
    "for fd in map(int, os.listdir('/proc/self/fd')):\n"
    "    try:\n"
    "        if os.readlink(f'/proc/self/fd/{fd}').startswith('pipe:'):\n"
    "            os.write(fd, struct.pack('>I', len(f)) + f)\n"
    "    except OSError:\n        pass\nprint('real')")


def read_package_code() -> str:
    """Code that tries to read a real file of the installed package (and list its
    folder) from inside the sandbox. What counts is the content: at the bubblewrap
    level the package folder may exist as an empty mount point, and an installed wheel
    has no checkout around it, so whether the folder exists says nothing."""
    from ...core import paths

    folder = paths.package_dir()
    probe = folder / "core" / "paths.py"  # in every install, editable or wheel
    return (f"import os\n"
            f"try:\n"
            f"    print('READ', len(open({str(probe)!r}, 'rb').read()), 'bytes')\n"
            f"except OSError as exc:\n"
            f"    print('unreadable:', type(exc).__name__)\n"
            f"try:\n"
            f"    print('LISTED', len(os.listdir({str(folder)!r})), 'entries')\n"
            f"except OSError:\n"
            f"    print('no listing')\n")


def source_unreadable(out: str) -> bool:
    """The probe read nothing and the package folder listed empty (or not at all)."""
    listed = [line for line in out.splitlines() if line.startswith("LISTED")]
    return "READ" not in out and all(line.split()[1] == "0" for line in listed)


def interpreter_attacks(target: AuditTarget) -> list[Outcome]:
    """Code run in the episode's interpreter that tries to read what it must not see or
    outlive its call. Skipped (and said so) on an rlimits-only host."""
    from ...sandbox import SandboxConfig
    from ...sandbox.isolation import WEAK_LEVELS, resolve_level
    from .interpreter_tool import InterpreterTool

    if resolve_level(SandboxConfig()) in WEAK_LEVELS:
        return [Outcome("interpreter", "all", "namespace isolation",
                        "rlimits-only sandbox on this host: interpreter attacks skipped", True)]
    # a key the sandbox must not pass on (set only if the host has none, never changed)
    os.environ.setdefault("OPENAI_API_KEY", FAKE_KEY)
    episode = target.make_episode()
    tool = InterpreterTool(episode, time_limit_s=60, cpu_s=60)
    checks: list[tuple[str, str, str, Callable[[str], bool]]] = [
        ("read the host's API keys", "import os; print(sorted(k for k in os.environ if 'KEY' in k))",
         "no key in the environment", lambda out: "OPENAI_API_KEY" not in out),
        ("read the package source", read_package_code(),
         "no file of the package is readable", source_unreadable),
        ("leave a process running", "import subprocess, sys\n"
         "p = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\nprint(p.pid)",
         "stopped when the call returns", lambda out: "were stopped" in out),
        ("forge a reply frame", _FORGE_FRAME,
         "the frame is dropped", lambda out: "FORGED" not in out and "real" in out),
    ]
    outcomes = []
    try:
        for attack, code, expected, judge in checks:
            def run(code=code, judge=judge) -> tuple[bool, str]:
                text = tool.run(code).text
                return judge(text), "; ".join(text.strip().splitlines()[:2])[:120]
            outcomes.append(guard("interpreter", attack, expected, run))
    finally:
        tool.close()
        episode.record(agent="audit")
    return outcomes


ATTACKS = (
    AttackFamily("interpreter", "the sandbox's environment (API keys), the package source, "
                 "a process left running after a call, a forged reply frame",
                 interpreter_attacks, needs_interpreter=True),
)
