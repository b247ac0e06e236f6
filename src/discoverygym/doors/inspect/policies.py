"""Scripted LLM policies: deterministic stand-ins for a model, driving the same
react loop (and the same tools) as a real LLM, offline.

A policy is a generator: it yields a `Step` (tool calls, or a text-only reply) and
receives the list of `Reply`s to that step's tool calls. Model front-ends are
stateless, so the next step is found by replaying the generator over the
conversation so far (`next_step`); policies must therefore depend only on what
they are sent. Both the Inspect provider (`provider.py`) and the fake OpenAI server
in the tests use this module."""

from __future__ import annotations

import inspect as pyinspect
import itertools
import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import paths


@dataclass(frozen=True)
class Call:
    """A tool call. `arguments` is a dict, or a raw string (possibly invalid JSON)."""

    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Step:
    """What the policy says next: tool calls, or (when `calls` is empty) a text reply."""

    calls: tuple[Call, ...] = ()
    text: str = ""


@dataclass(frozen=True)
class Reply:
    """The result of one tool call as the model sees it."""

    text: str
    is_error: bool = False


@dataclass
class Context:
    """What a policy knows: the episode prompt, the tool names, and model arguments."""

    prompt: str
    tools: list[str]
    args: dict[str, Any] = field(default_factory=dict)


Policy = Callable[[Context], Generator[Step, list[Reply], None]]
FINAL_TEXT = "I have nothing more to do."


def python(code: str) -> Step:
    return Step((Call("python", {"code": code}),))


def tool(name: str, **arguments: Any) -> Step:
    return Step((Call(name, arguments),))


def _json_line(text: str) -> Any:
    """The first line of `text` that parses as JSON (a python tool's printed result)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("{", "[")):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise ValueError(f"no JSON in tool output: {text[:300]!r}")


# ---- expert ----------------------------------------------------------------------
BRIEFING_CODE = """\
import json
print(json.dumps({"task": task, "units": units, "window": [float(w) for w in window],
                  "G_SI": float(G_SI), "budget": globals().get("budget")}, default=str))
"""


def _package_code(package: str, modules: list[Any]) -> str:
    """Python that defines `modules` (their source, sent as text, in import order) inside
    the sandbox, where discoverygym is not importable: each under its own dotted name
    with the root `discoverygym` renamed `package`, so relative imports between them
    (a suite's baselines importing the shared `physics/`) resolve as in the package.
    Binds `_m` to one namespace holding every public name of them."""
    lines = ["import sys, types",
             "def _package(name):",
             "    if name not in sys.modules:",
             "        sys.modules[name] = types.ModuleType(name)",
             "        sys.modules[name].__path__ = []",
             "_m = types.SimpleNamespace()"]
    for module in modules:
        dotted = package + module.__name__.removeprefix("discoverygym")
        parent = dotted.rsplit(".", 1)[0]
        parts = parent.split(".")
        lines += [f"_package({'.'.join(parts[:i])!r})" for i in range(1, len(parts) + 1)]
        lines += [f"_mod = types.ModuleType({dotted!r}); _mod.__package__ = {parent!r}",
                  f"sys.modules[{dotted!r}] = _mod",
                  f"exec(compile({pyinspect.getsource(module)!r}, "
                  f"{module.__name__.rsplit('.', 1)[-1] + '.py'!r}, 'exec'), _mod.__dict__)",
                  "_m.__dict__.update({k: v for k, v in vars(_mod).items() "
                  "if not k.startswith('__')})"]
    return "\n".join(lines) + "\n"


ZOOM_CODE = """\
import json
import numpy as np
_track = _m.track_from_table(observations, units)
try:
    _orbit = _m.ModelSolution(_track, float(G_SI)).orbit
except (ValueError, FloatingPointError, np.linalg.LinAlgError):
    _orbit = None
_zooms = []
if _orbit is not None and _orbit.bound:
    _zooms = [z.tolist() for z in _m.passage_zooms(_orbit, tuple(window),
                                                    units["time_to_s"], {count})]
print(json.dumps({{"zooms": _zooms}}))
"""

ANSWER_CODE = """\
import json
import numpy as np
_track = _m.track_from_table({table}, units)
try:
    _value = _m.answer(task["id"], {first}(_track, float(G_SI)))
except (ValueError, FloatingPointError, np.linalg.LinAlgError, AttributeError):
    _value = _m.answer(task["id"], _m.NumericSolution(_track, float(G_SI)))
print(json.dumps({{"answer": _value if isinstance(_value, bool) else float(_value)}}))
"""


def expert_gravity(ctx: Context) -> Generator[Step, list[Reply], None]:
    """Gravity, the way the adaptive scripted expert plays a bound orbit: read the
    briefing in python; observe a coarse irregular pass; fit a Keplerian orbit in
    the sandbox and zoom on one periastron and one apoastron passage; answer from
    the fitted model; submit. The analysis code (the package's own expert analysis)
    is sent to the sandbox as source text, since the package is not importable
    there. Tasks that need tight clusters of observations (drag, force law,
    unbound orbits) get the same plan, which is weaker for them."""
    from ...physics import kepler
    from ...suites.gravity.baselines import answers, kepler_model, measurements, numeric
    from ...suites.gravity.baselines import planning as gravity_planning
    from ...suites.gravity.baselines.expert import COARSE_COUNT, ZOOM_COUNT

    module = _package_code("gravity_baselines", [kepler, measurements, numeric, kepler_model,
                                                 answers, gravity_planning])
    replies = yield python(BRIEFING_CODE)
    brief = _json_line(replies[0].text)
    budget = brief.get("budget")
    if not budget:  # full-obs: the whole table is in `df`
        code = module + ANSWER_CODE.format(table="df", first="_m.NumericSolution")
        replies = yield python(code)
        yield tool("submit", answer=_json_line(replies[0].text)["answer"])
        return
    window = tuple(brief["window"])
    per_call = int(budget.get("per_call", 10))
    remaining = int(budget["remaining"])
    coarse = gravity_planning.coarse_times(window, min(COARSE_COUNT, remaining))
    # All observe calls of a pass in one assistant message (parallel tool calls).
    yield Step(tuple(Call("observe", {"times": b})
                     for b in gravity_planning.batches(coarse, per_call)))
    remaining -= len(coarse)
    replies = yield python(module + ZOOM_CODE.format(count=ZOOM_COUNT))
    zooms = [z for z in _json_line(replies[0].text)["zooms"] if len(z) <= remaining]
    batches = [b for z in zooms for b in gravity_planning.batches(z, per_call)]
    if batches:
        yield Step(tuple(Call("observe", {"times": b}) for b in batches))
    replies = yield python(module + ANSWER_CODE.format(table="observations",
                                                       first="_m.ModelSolution"))
    yield tool("submit", answer=_json_line(replies[0].text)["answer"])


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
    if "observe" in ctx.tools or "G_SI" in ctx.prompt:
        yield from expert_gravity(ctx)
    elif "probe" in ctx.tools:
        yield from expert_toy(ctx)
    else:
        yield Step(text="The expert policy does not know this suite.")


def parity(ctx: Context) -> Generator[Step, list[Reply], None]:
    """The toy suite's door-parity script, the same on every door (tests/test_door_parity.py):
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
    name, arguments = _json_line(replies[0].text)
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
