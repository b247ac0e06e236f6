"""Figures in the docs are written between markers by the command that measures them.

The marker writer replaces one block and nothing else, refuses a file whose markers are
missing, doubled or out of order, and refuses a block that would open an HTML comment;
the README's baselines table and every calibration table of the docs have the shape
their writers produce (tools/baselines_table.py, `discoverygym calibrate --readme`)."""

from __future__ import annotations

import importlib.util
import re
import sys

import pytest
from typer.testing import CliRunner

import toy_suite
from discoverygym.calibrate import (
    FALSE_LEAK_RISK,
    calibration_specs,
    false_leak_probability,
    few_episodes_warning,
)
from discoverygym.cli import app
from discoverygym.report.markers import MarkerError, read_block, replace_block, write_block
from testpaths import REPO

ROOT = REPO
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "src" / "discoverygym").rglob("README.md"))]
toy_suite.install()
runner = CliRunner()


def _baselines_tool():
    spec = importlib.util.spec_from_file_location("baselines_table",
                                                  ROOT / "tools" / "baselines_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["baselines_table"] = module
    spec.loader.exec_module(module)
    return module


FIXTURE = ("# Title\n\nbefore | text\n<!-- fig:a-1:begin -->\nold line\n<!-- fig:a-1:end -->"
           "\nafter <!-- other:begin --> text\n")


def test_the_block_between_markers_is_replaced_and_nothing_else():
    new = replace_block(FIXTURE, "fig:a-1", "\nnew | table\n\n")
    assert new == FIXTURE.replace("old line", "new | table")
    assert read_block(new, "fig:a-1") == "new | table"
    assert replace_block(new, "fig:a-1", "old line") == FIXTURE  # idempotent both ways


@pytest.mark.parametrize("text, why", [
    ("no markers at all", "exactly one"),
    (FIXTURE + "<!-- fig:a-1:begin -->", "exactly one"),
    ("<!-- fig:a-1:end -->\n<!-- fig:a-1:begin -->", "before"),
])
def test_missing_doubled_or_reversed_markers_are_refused(text, why):
    with pytest.raises(MarkerError, match=why):
        replace_block(text, "fig:a-1", "x")


@pytest.mark.parametrize("block", ["<!-- fig:a-1:end --> injected", "a <!-- comment"])
def test_a_block_that_opens_a_comment_is_refused(block):
    with pytest.raises(MarkerError, match="comment"):
        replace_block(FIXTURE, "fig:a-1", block)


@pytest.mark.parametrize("name", ["", "a b", "x-->", "fig:", "a\nb", "x" * 200])
def test_marker_names_are_plain_words(name):
    with pytest.raises(MarkerError):
        replace_block(FIXTURE, name, "x")


def test_write_block_rewrites_the_file_and_leaves_it_whole_on_failure(tmp_path):
    path = tmp_path / "README.md"
    path.write_text(FIXTURE)
    write_block(path, "fig:a-1", "new")
    assert path.read_text() == FIXTURE.replace("old line", "new")
    with pytest.raises(MarkerError):
        write_block(path, "fig:missing", "x")
    assert path.read_text() == FIXTURE.replace("old line", "new")
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary left


def test_the_baselines_table_escapes_every_cell_and_keeps_code_spans():
    tool = _baselines_tool()
    text = tool.table({"x": ("a | b", "`ag|ent` [link](javascript:x)", "<!-- x -->\nrow",
                             "**")})
    lines = text.splitlines()
    assert lines[0] == f"`{tool.COMMAND}`"
    row = lines[-1]
    assert row.count(" | ") == 3 and "\n" not in row and "<!--" not in row
    assert r"a \| b" in row and "`ag|ent`" in row and r"\[link\]" in row
    replace_block(FIXTURE, "fig:a-1", text)  # a table the writer made always fits a block


def test_the_readmes_baselines_block_has_the_shape_the_writer_produces():
    tool = _baselines_tool()
    block = read_block((ROOT / "docs" / "validity.md").read_text(), tool.MARKER)
    assert block is not None, "docs/validity.md lacks the baselines markers"
    lines = block.splitlines()
    assert lines[:4] == tool.table({}).splitlines()
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in lines[4:]]
    assert len(rows) == len(tool.ROWS) + 1  # every row, and tpbench's check
    baselines = [tool._cell(r.baseline) for r in tool.ROWS]
    baselines.insert([r.key for r in tool.ROWS].index("packages"), tool._cell(tool.TPBENCH[1]))
    assert [r[1] for r in rows] == baselines
    assert all(len(r) == 4 and r[2] for r in rows)


def _calibrate_blocks() -> list[tuple[str, str, str]]:
    found = []
    for path in DOCS:
        text = path.read_text()
        for name in re.findall(r"<!-- (calibrate:[A-Za-z0-9_.:-]+):begin -->", text):
            found.append((str(path.relative_to(ROOT)), name, read_block(text, name)))
    return found


def test_every_calibration_table_in_the_docs_is_the_commands_output():
    blocks = _calibrate_blocks()
    assert len(blocks) >= 8
    for path, name, block in blocks:
        assert block is not None, (path, name)
        first, _, second, *_ = block.splitlines()
        command = re.fullmatch(r"`discoverygym calibrate (\S+) --seeds [^`]+`", first)
        assert command, (path, name)
        # calibrate:SUITE or calibrate:SUITE<sep>VARIANT: the block of that suite's command
        assert re.fullmatch(rf"calibrate:{re.escape(command.group(1))}([-:].+)?", name), \
            (path, name, first)
        assert second.startswith("Seeds ") and "| task |" in block, (path, name)


def test_calibrate_readme_writes_its_table_between_the_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- calibrate:toy-x:begin -->\nold\n<!-- calibrate:toy-x:end -->"
                      "\nend\n")
    out = tmp_path / "toy.md"
    result = runner.invoke(app, ["calibrate", "toy", "--seeds", "0-1", "--executor", "serial",
                                 "--runs", str(tmp_path / "runs"), "--quiet", "--out", str(out),
                                 "--readme", str(readme), "--marker", "toy-x"])
    assert result.exit_code == 0, result.output
    text = readme.read_text()
    assert text.startswith("intro\n<!-- calibrate:toy-x:begin -->\n`discoverygym calibrate toy")
    assert text.endswith("\n<!-- calibrate:toy-x:end -->\nend\n")
    assert read_block(text, "calibrate:toy-x") == out.read_text().strip("\n")


def test_calibrate_refuses_a_readme_without_its_markers_before_playing(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    result = runner.invoke(app, ["calibrate", "toy", "--seeds", "0", "--executor", "serial",
                                 "--runs", str(tmp_path / "runs"), "--readme", str(readme)])
    assert result.exit_code == 1
    assert "<!-- calibrate:toy:begin -->" in result.output
    assert not (tmp_path / "runs").exists() and readme.read_text() == "no markers\n"


def test_the_chance_of_a_leak_verdict_by_luck():
    assert false_leak_probability(1, 0.5) == pytest.approx(0.5)
    assert false_leak_probability(6, 0.5) == pytest.approx(7 / 64)  # 5 or 6 of 6
    assert false_leak_probability(40, 0.5) < FALSE_LEAK_RISK


def test_one_seed_of_gravity_is_called_too_few_for_its_yes_no_tasks_and_five_are_not():
    one = few_episodes_warning("gravity", calibration_specs("gravity", [0]))
    assert one is not None and "too few seeds" in one and "--seeds 0-4" in one
    assert few_episodes_warning("gravity", calibration_specs("gravity", range(5))) is None
    assert few_episodes_warning("toy", calibration_specs("toy", [0])) is None  # no chance


def test_calibrate_says_so_in_one_warning_line():
    result = runner.invoke(app, ["calibrate", "gravity", "--seeds", "0", "--dry-run"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "too few seeds" in warnings[0]
    five = runner.invoke(app, ["calibrate", "gravity", "--seeds", "0-4", "--dry-run"])
    assert "warning:" not in five.output


def test_the_tpbench_problem_table_is_the_commands_output():
    from discoverygym.suites.tpbench.check import count_table
    from discoverygym.suites.tpbench.problem import builtin_problem_dir, load_problems

    readme = ROOT / "src" / "discoverygym" / "suites" / "tpbench" / "README.md"
    block = read_block(readme.read_text(), "tpbench-problems")
    assert block == count_table(load_problems(builtin_problem_dir())).strip("\n"), \
        "rerun: discoverygym tpbench check --table --readme " + str(readme.relative_to(ROOT))


def test_the_readmes_calibration_summary_agrees_with_the_suites_tables():
    """The Calibration table of docs/validity.md summarises each suite's table in words; the count
    of valid tasks it gives is the one the command wrote into the suite's README."""
    counts = {}
    for _, _, block in _calibrate_blocks():
        command = block.splitlines()[0].strip("`")
        found = re.search(r"valid: (\d+), too hard: (\d+), leaks: (\d+), weak: (\d+)\.", block)
        counts[command] = tuple(int(n) for n in found.groups())
    rows = re.findall(r"^\| [^|]+ \| `(discoverygym calibrate [^`]+)` \| (\d+) valid",
                      (ROOT / "docs" / "validity.md").read_text(), re.M)
    assert len(rows) >= 5
    for command, valid in rows:
        assert command in counts, f"no suite README holds the table of {command}"
        assert counts[command][0] == int(valid), (command, counts[command])
