"""Scripted LLM policies: deterministic stand-ins for a model, driving the same
react loop (and the same tools) as a real LLM, offline.

A policy is a generator (core/conversation.py): it yields a `Step` (tool calls, or a
text-only reply) and receives the list of `Reply`s to that step's tool calls. A suite's
own expert (gravity's) is declared with the suite and found through the registry
(`expert` below), since a door never imports a suite's baselines. Model front-ends are
stateless, so the next step is found by replaying the generator over the
conversation so far (`next_step`); policies must therefore depend only on what
they are sent. Both the Inspect provider (`provider.py`) and the fake OpenAI server
in the tests use this module."""

from __future__ import annotations

import itertools
from collections.abc import Generator
from pathlib import Path

from ...core import paths
from ...core.conversation import Call, Context, Policy, Reply, Step, json_line, python, tool
from ...core.suite import conversation_expert

FINAL_TEXT = "I have nothing more to do."
# Re-exported for the provider and the tests, which build and read conversations.
__all__ = ["FINAL_TEXT", "POLICIES", "Call", "Context", "Policy", "Reply", "Step",
           "estimate_tokens", "get_policy", "next_step", "python", "tool"]


def _bisect_toy(steps: int = 8) -> Generator[Step, list[Reply], tuple[float, float]]:
    """Bisect the test suite's hidden number with `probe`; returns the last bracket."""
    lo, hi = 0.0, 100.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        replies = yield tool("probe", x=mid)
        if "True" in replies[0].text:
            lo = mid
        else:
            hi = mid
    return lo, hi


def expert_toy(ctx: Context) -> Generator[Step, list[Reply], None]:
    """The test suite's number guess: bisect with `probe`, average in python, submit."""
    lo, hi = yield from _bisect_toy()
    replies = yield python(f"({lo!r} + {hi!r}) / 2")
    yield tool("submit", answer=float(replies[0].text.strip()))


def expert(ctx: Context) -> Generator[Step, list[Reply], None]:
    """The expert of the suite whose episode this is: the scripted expert a suite
    declares in its registry row (`SuiteEntry.conversation_expert`; gravity's), else the
    test suite's bisection. Found through the registry because a door never imports a
    suite's baselines."""
    suite_expert = conversation_expert(ctx)
    if suite_expert is not None:
        yield from suite_expert.play(ctx)
    elif "probe" in ctx.tools:
        yield from expert_toy(ctx)
    else:
        yield Step(text="The expert policy does not know this suite.")


def parity(ctx: Context) -> Generator[Step, list[Reply], None]:
    """The toy suite's door-parity script, the same on every door (tests/doors/test_door_parity.py):
    a probe out of range, a probe of the wrong type, eight bisecting probes, a submit."""
    yield tool("probe", x=500.0)
    yield tool("probe", x="not a number")
    lo, hi = yield from _bisect_toy()
    yield tool("submit", answer=(lo + hi) / 2)


# ---- never-submit -------------------------------------------------------------------
def never_submit(ctx: Context) -> Generator[Step, list[Reply], None]:
    """Talks and computes but never submits (the episode must be recorded as failed)."""
    yield Step(text="Let me think about this for a while.")
    for i in itertools.count():
        yield python(f"print('still thinking', {i})")


# ---- malformed ----------------------------------------------------------------------
def malformed(ctx: Context) -> Generator[Step, list[Reply], None]:
    """Bad tool calls of every kind, then valid ones: the episode must go on."""
    yield tool("teleport", destination="Mars")                      # unknown tool
    yield Step((Call("python", '{"code": "1 + 1"'),))                 # unparsable JSON
    yield tool("python", source="1 + 1")                             # wrong argument name
    yield tool("submit")                                             # missing answer
    yield tool("submit", answer="about forty")                       # wrong type
    if "observe" in ctx.tools:
        yield tool("observe", times=[-1e30])                         # outside the window
        yield tool("observe", times=[])                              # empty
    if "probe" in ctx.tools:
        yield tool("probe", x=500.0)                                 # outside the range
    replies = yield python("1 + 1")                                  # the episode goes on
    yield tool("submit", answer=float(replies[0].text.strip()))


def hostile(ctx: Context) -> Generator[Step, list[Reply], None]:
    """Arguments built to break a host (5000-deep nesting, a 400-digit number, 300 kB of
    text, a 250,000-element list), then a valid answer: each must come back as a short
    error that costs nothing, and the episode must still end in a record."""
    deep = "[" * 5000 + "]" * 5000
    yield Step((Call("submit", '{"answer": ' + deep + "}"),))
    yield Step((Call("submit", '{"answer": 1' + "0" * 400 + "}"),))
    yield tool("submit", answer="x" * 300_000)
    yield tool("submit", answer=[0.5] * 250_000)
    yield tool("submit", answer=50.0)


# ---- cheater ------------------------------------------------------------------------
CHEATS: list[tuple[str, str]] = [
    ("read the cache", """\
import os
found = [os.path.join(r, f) for r, _, fs in os.walk({cache!r}) for f in fs][:20]
print('cache files:', found)
print(open(found[0]).read()[:500] if found else 'cache not found')"""),
    ("read the default cache", "print(open({default_cache!r} + '/x').read())"),
    ("read the run directory", "import os; print(os.listdir({runs!r}))"),
    ("read the package source", "import os; print(os.listdir({package!r}))"),
    ("import discoverygym", """\
import discoverygym
from discoverygym.core import get_suite
print(get_suite('gravity'))"""),
    ("read API keys", """\
import os, glob
keys = {{k: v for k, v in os.environ.items() if 'KEY' in k or 'TOKEN' in k}}
leaked = []
for p in glob.glob('/proc/*/environ'):
    try:
        leaked += [b for b in open(p, 'rb').read().split(b'\\0') if b'KEY' in b]
    except OSError:
        pass
print('keys:', keys, 'proc:', leaked)"""),
    ("open a network socket", """\
import socket
s = socket.create_connection(('127.0.0.1', {port}), timeout=3)
print('connected to the host')"""),
    ("resolve a host name", "import socket; print(socket.getaddrinfo('api.openai.com', 443))"),
    ("fork bomb", """\
import os, time
n = 0
try:
    for _ in range(100000):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print('fork stopped after', n, 'children:', exc)"""),
    ("allocate 50 GB", "block = bytearray(50 * 10**9)\nprint('allocated', len(block))"),
    ("loop forever", "while True:\n    pass"),
]


def cheater(ctx: Context) -> Generator[Step, list[Reply], None]:
    """Tries to reach the truth or harm the host from inside the sandbox, then
    submits a guess. Every attempt must fail or be stopped."""
    targets = {
        "cache": str(ctx.args.get("cache") or paths.cache_root()),
        "default_cache": str(Path.home() / ".cache" / "discoverygym"),
        "runs": str(ctx.args.get("runs") or Path.cwd() / "runs"),
        "package": str(paths.package_dir()),
        "port": int(ctx.args.get("port") or 80),
    }
    for _, template in CHEATS:
        yield python(template.format(**targets))
    yield tool("submit", answer=0.0)


# ---- written solutions and their grader ---------------------------------------------
def stub_solution(ctx: Context) -> Generator[Step, list[Reply], None]:
    """For suites answered with a written solution (tpbench): reads the required
    function's name and arguments from the interpreter and submits a well-formed
    solution whose function returns 0.0. Exercises verification and grading."""
    replies = yield python("import json\nprint(json.dumps([function_name, argument_names]))")
    name, arguments = json_line(replies[0].text)
    code = f"def {name}({', '.join(arguments)}):\n    return 0.0\n"
    yield tool("submit", solution="The quantity vanishes identically.\n\n```python\n"
                                  f"{code}```\n")


def grader(ctx: Context) -> Generator[Step, list[Reply], None]:
    """A grader-model stand-in: grade A when the automatic verification passed, D
    otherwise (it reads the section of the grading prompt that states the verdict)."""
    verdict = ctx.prompt.split("## Automatic verification", 1)[-1].split("##", 1)[0]
    yield Step(text=f"Grade: {'A' if verdict.strip() == 'correct' else 'D'}")


POLICIES: dict[str, Policy] = {
    "expert": expert,
    "never-submit": never_submit,
    "malformed": malformed,
    "cheater": cheater,
    "stub-solution": stub_solution,
    "grader": grader,
    "hostile": hostile,
    "parity": parity,
}


def get_policy(name: str) -> Policy:
    if name not in POLICIES:
        raise ValueError(f"Unknown discoverygym policy {name!r}. Policies: "
                         f"{', '.join(POLICIES)}.")
    return POLICIES[name]


def next_step(policy: Policy, ctx: Context, history: list[list[Reply]]) -> Step:
    """Replay `policy` over the replies to its earlier steps; return its next step.
    A finished policy answers with a plain text reply."""
    gen = policy(ctx)
    try:
        step = next(gen)
        for replies in history:
            step = gen.send(replies)
    except StopIteration:
        return Step(text=FINAL_TEXT)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        # The conversation went somewhere the script did not plan for.
        return Step(text=f"The scripted policy cannot continue: {type(exc).__name__}: {exc}")
    return step


def estimate_tokens(text: str) -> int:
    """A deterministic token count (about four characters per token)."""
    return max(1, len(text) // 4)
