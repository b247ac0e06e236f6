"""`--help` texts flow: a paragraph of a command's docstring is one line that the
terminal wraps (issue 36: at 80 columns sentences broke in the middle, where the
source's lines ended)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from discoverygym.cli import app, flowed


def _commands(typer_app):
    yield from typer_app.registered_commands
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            yield from _commands(group.typer_instance)


def test_flowed_joins_lines_and_keeps_paragraphs():
    assert flowed("One line\n    goes on.\n\n    Second\n    paragraph.") == \
        "One line goes on.\n\nSecond paragraph."


def test_every_commands_help_is_flowed():
    helps = [c.help for c in _commands(app) if c.help]
    assert len(helps) > 20
    for text in helps:
        assert not re.search(r"[^\n]\n[^\n]", text), text


def test_run_help_keeps_the_sentence_together():
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    words = " ".join(result.output.split())
    assert "--tasks period`; `discoverygym options SUITE` lists them." in words
