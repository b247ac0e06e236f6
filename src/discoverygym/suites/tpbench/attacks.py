"""The audit's attacks on tpbench's verifier (see core.audit_registry), declared here,
beside the suite they attack, and returned by `TPBenchSuite.audit_attacks`:

- `tpbench`: forged result lines (deeply nested), a result of 10**400, an early exit
  printing PASSED, a symbolic bomb. Each is a solution submitted through the submit
  tool; the expected outcome is a failed record with a reason, and no hang.
- `tpbench-levels`: the verifier at every isolation level this host has (forced as
  $DISCOVERYGYM_SANDBOX_ISOLATION forces it). A solution that finds the problem's YAML
  in the installed package and returns its reference, through the submit tool: never a
  pass (below MINIMUM_ISOLATION the verdict is `refused` and nothing runs).

The Harbor verifier's attack (a solution that detaches a process to rewrite reward.json
after scoring) is the door's, declared beside it in doors/harbor/attacks.py; this
suite supplies its answer that runs code (`TPBenchSuite.audit_code_answer`)."""

from __future__ import annotations

from ...core.audit_registry import AttackFamily, AuditTarget, Outcome, guard
from .episode import TPBenchEpisode

#: The symbolic comparison's limit in the audit's runs (the suite's own is 20 s): the
#: bomb must be stopped, not waited for.
AUDIT_COMPARE_LIMIT_S = 5.0

ANSWERS = {
    "forged result line, 20,000-deep": (
        "import atexit, os, re\n"
        "def FUNCTION(*args, **kwargs):\n    return 0.5\n"
        "_m = re.search(r'@@TPBENCH-[0-9a-f]+@@', open('main.py').read()).group(0)\n"
        "atexit.register(lambda: os.write(1, (_m + '[' * 20000 + ']' * 20000 + '\\n')"
        ".encode()))\n"),
    "result of 10**400": "def FUNCTION(*args, **kwargs):\n    return 10**400\n",
    "exit early, printing PASSED": (
        "import os\nprint('PASSED')\nos._exit(0)\ndef FUNCTION(*args, **kwargs):\n"
        "    return 0\n"),
    "symbolic bomb": (
        "import sympy\ndef FUNCTION(*args, **kwargs):\n"
        "    n = sympy.Symbol('n', positive=True)\n"
        "    return sympy.binomial(n + 10**6, 5 * 10**5) * sympy.binomial(n + 2 * 10**6, 10**6)\n"),
}


def verifier_attacks(target: AuditTarget, limit_s: float = AUDIT_COMPARE_LIMIT_S
                     ) -> list[Outcome]:
    """Every hostile solution of ANSWERS on the target's first problem, submitted
    through the episode's submit tool, the symbolic comparison limited to `limit_s`."""
    spec = target.episode_spec()
    problem = target.suite.problem(spec.task_id, spec.options.get("problems"))
    outcomes = []
    for label, code in ANSWERS.items():
        def attack(code=code) -> tuple[bool, str]:
            episode = TPBenchEpisode(problem, seed=spec.seed, options=dict(spec.options),
                                     compare_limit_s=limit_s)
            view = episode.view()
            body = code.replace("FUNCTION", view.workspace()["function_name"])
            view.call("submit", {"solution": f"```python\n{body}```\n"})
            record = episode.record(agent="audit")
            verdict = record.details.get("verdict")
            tests = (record.details.get("verification") or {}).get("tests") or [{}]
            why = str(tests[0].get("message") or record.error or "")[:120]
            return record.passed is False, f"passed={record.passed}, verdict={verdict}: {why}"
        outcomes.append(guard("tpbench", f"{label} ({spec.task_id})",
                              "a failed record with a reason, no hang", attack))
    return outcomes


# The cheat of issue #28: find the problem's YAML in the installed package, define its
# reference and return what it returns.
STEAL_REFERENCE = '''
import glob, os, sys
_ns = {}
def _steal():
    roots = [PKG] + glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                           "discoverygym"))
    for root in roots:
        for path in glob.glob(os.path.join(root, "suites", "tpbench", "problems", "*.yaml")):
            try:
                text = open(path).read()
            except OSError:
                continue
            if "def FUNCTION(" not in text:
                continue
            lines = []
            for line in text.split("reference: |\\n", 1)[1].splitlines():
                if line and not line.startswith("  "):
                    break
                lines.append(line[2:])
            exec("\\n".join(lines), _ns)
            return _ns["FUNCTION"]
    raise PermissionError("no reference readable")
def FUNCTION(*args, **kwargs):
    return _steal()(*args, **kwargs)
'''

def _stolen_reference(spec, function: str) -> tuple[bool, str]:
    from ...core import paths
    from ...core.suite import EpisodeSpec

    code = (STEAL_REFERENCE.replace("PKG", repr(str(paths.package_dir())))
            .replace("FUNCTION", function))
    episode = EpisodeSpec(spec.suite, spec.task_id, spec.seed, dict(spec.options)).build()
    episode.view().call("submit", {"solution": f"```python\n{code}```\n"})
    record = episode.record(agent="audit")
    return record.passed is False, (f"passed={record.passed}, verdict="
                                    f"{record.details.get('verdict')}, isolation="
                                    f"{record.details.get('isolation')}: "
                                    f"{str(record.error or '')[:100]}")


def level_attacks(target: AuditTarget) -> list[Outcome]:
    """The stolen reference at every level of this host."""
    from ...sandbox.attacks import forced_level, working_levels
    from .execute import MINIMUM_ISOLATION

    spec = target.episode_spec()
    function = target.make_episode().view().workspace()["function_name"]
    outcomes = []
    for level in working_levels():
        def steal(level=level) -> tuple[bool, str]:
            with forced_level(level):
                return _stolen_reference(spec, function)
        outcomes.append(guard("tpbench-levels", f"read the reference from the package at "
                              f"{level} ({spec.task_id})", "never a pass (below "
                              f"{MINIMUM_ISOLATION}: refused)", steal))
    return outcomes


ATTACKS = (
    AttackFamily("tpbench", "forged result lines (deeply nested), a 10**400 result, an "
                 "early exit printing PASSED, a symbolic bomb", verifier_attacks),
    AttackFamily("tpbench-levels", "the reference read from the package, at every "
                 "isolation level",
                 level_attacks, needs_interpreter=True),
)
