"""Gravity's scripted expert for the model doors: a stand-in for an LLM that plays a
gravity episode through the conversation (the `python` tool, `observe`, `submit`) the
way the adaptive scripted expert (`expert.py`) plays it, offline.

Declared in the gravity suite's registry row (`SuiteEntry.conversation_expert`) as
`EXPERT`, so the Inspect door's `expert` policy finds it through the registry: a door
never imports a suite's baselines."""

from __future__ import annotations

import inspect as pyinspect
from collections.abc import Generator
from typing import Any

from ....core.conversation import (
    Call,
    Context,
    Reply,
    ScriptedExpert,
    Step,
    json_line,
    python,
    tool,
)

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
    from ....physics import kepler
    from . import answers, kepler_model, measurements, numeric
    from . import planning as gravity_planning
    from .expert import COARSE_COUNT, ZOOM_COUNT

    module = _package_code("gravity_baselines", [kepler, measurements, numeric, kepler_model,
                                                 answers, gravity_planning])
    replies = yield python(BRIEFING_CODE)
    brief = json_line(replies[0].text)
    budget = brief.get("budget")
    if not budget:  # full-obs: the whole table is in `df`
        code = module + ANSWER_CODE.format(table="df", first="_m.NumericSolution")
        replies = yield python(code)
        yield tool("submit", answer=json_line(replies[0].text)["answer"])
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
    zooms = [z for z in json_line(replies[0].text)["zooms"] if len(z) <= remaining]
    batches = [b for z in zooms for b in gravity_planning.batches(z, per_call)]
    if batches:
        yield Step(tuple(Call("observe", {"times": b}) for b in batches))
    replies = yield python(module + ANSWER_CODE.format(table="observations",
                                                       first="_m.ModelSolution"))
    yield tool("submit", answer=json_line(replies[0].text)["answer"])


def _is_gravity(ctx: Context) -> bool:
    return "observe" in ctx.tools or "G_SI" in ctx.prompt


EXPERT = ScriptedExpert(recognises=_is_gravity, play=expert_gravity)
