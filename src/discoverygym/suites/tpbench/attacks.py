"""The audit's attacks on tpbench's verifier (see core.audit_registry): forged result
lines (deeply nested), a result of 10**400, an early exit printing PASSED, a symbolic
bomb. Each is a solution submitted through the submit tool; the expected outcome is a
failed record with a reason, and no hang. Declared here, beside the suite they attack,
and returned by `TPBenchSuite.audit_attacks`."""

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


ATTACKS = (
    AttackFamily("tpbench", "forged result lines (deeply nested), a 10**400 result, an "
                 "early exit printing PASSED, a symbolic bomb", verifier_attacks),
)
