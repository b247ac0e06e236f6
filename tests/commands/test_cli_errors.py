"""Every user error and environment failure of the command line is one line with its
cause and a non-zero exit, never a traceback. Each case runs the real command in a
subprocess; a missing extra is played by hiding its modules from the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# Runs `discoverygym ARGS` through the package's entry point with some modules hidden,
# as on a machine where their extra is not installed.
_HIDING_RUNNER = textwrap.dedent("""
    import sys
    hidden = set(sys.argv[1].split(",")) - {""}

    class Hide:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in hidden:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    sys.argv = ["discoverygym", *sys.argv[2:]]
    from discoverygym.cli import main
    main()
""")


def discoverygym(*args: str, hide: str = "", cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _HIDING_RUNNER, hide, *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin",
                               "DISCOVERYGYM_CACHE": "/tmp/dg-cli-errors-cache"})


def one_line_error(result: subprocess.CompletedProcess, *needles: str) -> str:
    both = result.stdout + result.stderr
    assert result.returncode != 0, both
    assert "Traceback" not in both and "╭" not in both, both
    lines = [line for line in both.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, both
    for needle in needles:
        assert needle in lines[0], both
    return lines[0]


def test_list_shows_a_suite_with_a_missing_extra_as_unavailable():
    result = discoverygym("list", "--json", hide="jax,celerite2")
    assert result.returncode == 0, result.stderr
    rows = {r["suite"]: r for r in json.loads(result.stdout)}
    assert rows["gravity"]["available"]
    assert not rows["mad"]["available"] and rows["mad"]["extra"] == "mad"
    assert "make install-all" in rows["mad"]["reason"]
    assert not rows["stargazer"]["available"] and rows["stargazer"]["extra"] == "stargazer"
    table = discoverygym("list", hide="jax")
    assert table.returncode == 0 and "needs the [mad] extra" in table.stdout


@pytest.mark.parametrize("args, hide, extra", [
    (("run", "mad", "--agent", "newtonian"), "jax", "[mad]"),
    (("tasks", "stargazer"), "celerite2", "[stargazer]"),
    (("leaderboard", "/nonexistent"), "duckdb", "[leaderboard]"),
    (("mcp", "gravity", "period", "--record", "/tmp/x.json"), "anyio", "[mcp]"),
    (("rl", "setup"), "verifiers", "make install-rl"),
])
def test_a_command_that_needs_a_missing_extra_names_it(args, hide, extra):
    result = discoverygym(*args, hide=hide)
    one_line_error(result, extra)
    assert result.returncode == 1


def test_report_needs_matplotlib_and_a_writable_output(tmp_path):
    run = tmp_path / "run"
    done = discoverygym("run", "gravity", "--agent", "constant", "--tasks", "period",
                        "--worlds", "A", "--workers", "1", "--quiet", "--out", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    one_line_error(discoverygym("report", str(run), hide="matplotlib"), "[report]")
    bad = discoverygym("report", str(run), "-o", "/proc/no-such-dir/report.html")
    assert bad.returncode == 1
    one_line_error(bad, "cannot write the report", "/proc/no-such-dir")


def test_run_into_a_file_in_the_way(tmp_path):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("x")
    result = discoverygym("run", "gravity", "--agent", "constant", "--tasks", "period",
                          "--worlds", "A", "--quiet", "--out", str(in_the_way))
    assert result.returncode == 1
    one_line_error(result, "a file is in the way", str(in_the_way))


def test_calibrate_refuses_an_unwritable_table_before_playing(tmp_path):
    result = discoverygym("calibrate", "gravity", "--seeds", "0", "--tasks", "period",
                          "--out", "/proc/no-such-dir/table.md", "--runs", str(tmp_path / "r"))
    one_line_error(result, "/proc/no-such-dir/table.md")
    assert not (tmp_path / "r").exists()  # nothing was played


def test_bad_seeds_name_the_accepted_forms():
    line = one_line_error(discoverygym("calibrate", "gravity", "--seeds", "0..3"))
    assert "0-9" in line and "0,2,5" in line
    line = one_line_error(discoverygym("run", "mad", "--agent", "newtonian", "--seeds", "0..3"))
    assert "0-9" in line


def test_a_misspelt_option_suggests_the_closest_of_all_options():
    one_line_error(discoverygym("run", "gravity", "--agnet", "constant"), "--agent")
    one_line_error(discoverygym("run", "gravity", "--agent", "constant", "--protcol", "full-obs"),
                   "--protocol")


def test_a_ray_client_address_that_cannot_be_used_is_one_line(tmp_path):
    # Hidden Ray client (grpc): the address needs the [ray-client] extra.
    result = discoverygym("run", "gravity", "--agent", "constant", "--tasks", "period",
                          "--worlds", "A", "--quiet", "--executor", "ray", "--address",
                          "ray://127.0.0.1:9", "--out", str(tmp_path / "r"), hide="grpc")
    one_line_error(result, "ray-client")
