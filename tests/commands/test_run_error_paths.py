"""`discoverygym run` refuses a mistyped command before it imports a suite's heavy
modules (issue 37 item 5: these took 2.5-5.7 s against 0.3 s for other commands), and
says what it takes (issue 36). No timing here: the figure is bench/run_errors.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from discoverygym.cli import app
from testpaths import REPO

HEAVY = ("jax", "rebound", "inspect_ai", "scipy", "astropy", "pandas", "celerite2",
         "duckdb", "ray")

#: Each is refused (exit 1, or 2 for click's own range check).
MISTAKES = [
    ["run", "gravty", "--agent", "expert-adaptive"],
    ["run", "gravity"],
    ["run", "gravity", "--agent", "expert-adaptive", "--model", "x/y"],
    ["run", "gravity", "--agent", "expert-adaptive", "--workers", "-3"],
    ["run", "tpbench", "--agent", "reference", "--grader-model", "x/y"],
    ["run", "tpbench", "--agent", "nobody"],
    ["run", "tpbench", "--agent", "reference", "--agnet", "x"],
    ["run", "packages", "--agent", "baseline", "--seeds", "zero"],
    # the suites whose own modules load REBOUND, SciPy or JAX
    ["run", "gravity", "--agent", "expert-adaptiv"],
    ["run", "stargazer", "--agent", "clasical"],
    ["run", "mad", "--agent", "newtonain"],
    ["run", "mad", "--agent", "newtonian", "--seeds", "zero"],
    ["run", "gravity", "--agent", "expert-adaptive", "--protocl", "full-obs"],
    ["run", "mad", "--agent", "newtonian", "--lwa", "x"],
    ["run", "stargazer", "--agent", "classical", "--teir", "1"],
]

PROBE = """
import json, sys
from discoverygym.cli import app
codes = []
for args in json.loads(sys.argv[1]):
    try:
        app(args, prog_name="discoverygym")
    except SystemExit as exc:
        codes.append(exc.code)
print(json.dumps({"codes": codes, "heavy": [m for m in json.loads(sys.argv[2])
                                             if m in sys.modules]}))
"""


def test_mistakes_are_refused_before_heavy_imports():
    env = {**os.environ, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    # the built-in suites' error paths: a test plugin other modules register (the toy
    # suite, which imports what it likes) is no part of them
    env.pop("DISCOVERYGYM_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(MISTAKES), json.dumps(HEAVY)],
                          capture_output=True, text=True, env=env, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(code in (1, 2) for code in result["codes"]), (result, done.stdout)
    assert len(result["codes"]) == len(MISTAKES)
    assert result["heavy"] == [], result


def test_negative_workers_are_refused():
    result = CliRunner().invoke(app, ["run", "tpbench", "--agent", "reference", "--workers",
                                      "-3"], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and "--workers" in result.output
    assert "greater than or equal to 1" in result.output


def test_a_misspelt_option_lists_the_commands_own_options_too():
    """Before: "Did you mean --agent?", then a list of options without --agent."""
    result = CliRunner().invoke(app, ["run", "tpbench", "--agent", "reference", "--modle",
                                      "x"], env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "Did you mean --model?" in result.output
    assert "the command also takes" in result.output and "--agent, --model" in result.output
    typo = CliRunner().invoke(app, ["run", "tpbench", "--agnet", "reference"],
                              env={"COLUMNS": "300"})
    assert typo.exit_code == 1 and "--agnet: did you mean --agent?" in typo.output


def test_an_unknown_agent_names_the_closest():
    result = CliRunner().invoke(app, ["run", "tpbench", "--agent", "referense"],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 1 and "Did you mean reference?" in result.output


def test_each_rows_declared_options_are_the_suites_own():
    """The registry row's option names (checked before the suite loads) and the suite's
    run_options (which parse the values) are the same list, so neither refuses what the
    other takes."""
    from discoverygym.core import SUITES, get_suite, load_plugins

    load_plugins()
    declared = {name: entry.options for name, entry in SUITES.items()
                if entry.options is not None}
    assert {"gravity", "mad", "stargazer", "tpbench", "packages"} <= set(declared)
    for name, options in declared.items():
        assert options == tuple(o.name for o in get_suite(name).run_options), name


def test_a_mistyped_option_of_a_heavy_suite_names_the_closest():
    result = CliRunner().invoke(app, ["run", "mad", "--agent", "newtonian", "--lwa", "x"],
                                env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "Suite 'mad' has no option --lwa. Did you mean --law?" in result.output
