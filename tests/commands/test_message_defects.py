"""The small message defects of issue 36, each through the command a user types."""

from __future__ import annotations

import sys

from typer.testing import CliRunner

from discoverygym.cli import app


def _invoke(args, **kwargs):
    return CliRunner().invoke(app, args, env={"COLUMNS": "300"}, **kwargs)


def test_tpbench_check_of_a_missing_folder_is_one_error_and_no_table(tmp_path):
    """Before: an empty table, then "not a directory of problem files"."""
    result = _invoke(["tpbench", "check", str(tmp_path / "path" / "to" / "problems")])
    assert result.exit_code == 1
    assert "┏" not in result.output and "tpbench check:" not in result.output
    assert result.output.strip().startswith("error:")
    assert "no such file or directory" in result.output


def test_a_missing_problems_file_says_it_is_missing(tmp_path):
    """Before: `--problems public.jsonl` (absent) said "not a directory"."""
    result = _invoke(["run", "tpbench", "--agent", "reference", "--problems",
                      str(tmp_path / "public.jsonl"), "--dry-run"])
    assert result.exit_code == 1
    assert "no such file or directory" in result.output
    assert "not a directory" not in result.output


def test_package_check_names_the_sota_value_whole(tmp_path):
    """Before: the whole SOTA entry's repr, cut at 200 characters mid-string."""
    assert _invoke(["package", "new", "my-task", "--parent", str(tmp_path)]).exit_code == 0
    result = _invoke(["package", "check", str(tmp_path / "my-task"), "--static-only"])
    assert result.exit_code == 1
    assert "SOTA value 'TODO' has no number" in result.output
    assert "'run_by': 'T has" not in result.output


#: In a process of its own: hiding httpx from this process would also break any import
#: of Inspect (and its entry points' registration) that happened during the test.
_BARE_RL_EVAL = """
import importlib.util, json, sys
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: None if name == "verifiers" else real(name, *a)
sys.modules["httpx"] = None  # a bare install has no httpx either
from typer.testing import CliRunner
from discoverygym.cli import app
from discoverygym.core.extras import missing_module_message
result = CliRunner().invoke(app, ["rl", "eval", "gravity", "--model", "m", "--base-url",
                                  "http://127.0.0.1:9/v1"], env={"COLUMNS": "300"})
print(json.dumps({"import_error": isinstance(result.exception, ImportError),
                  "message": missing_module_message(result.exception)
                  if isinstance(result.exception, ImportError) else result.output}))
"""


def test_rl_eval_without_verifiers_asks_for_the_rl_extra():
    """Before: a bare install missed httpx first and asked for [server]."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-c", _BARE_RL_EVAL], capture_output=True,
                          text=True, timeout=300)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["import_error"], result
    message = result["message"]
    assert "[rl]" in message and "[server]" not in message
