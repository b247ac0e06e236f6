"""The system prompt quoted in the Inspect adapter's README is the one in use."""

from __future__ import annotations

from pathlib import Path

from discoverygym.core import get_suite
from discoverygym.doors.inspect import limits


def test_readme_quotes_the_system_prompt():
    readme = (Path(limits.__file__).parent / "README.md").read_text()
    quoted = readme.split("```text\n", 1)[1].split("```", 1)[0]
    # The README shows each paragraph on one line; the source wraps with backslashes.
    assert quoted.strip() == limits.SYSTEM_PROMPT.strip()
    assert limits.system_prompt("gravity").endswith(get_suite("gravity").agent_note + "\n")
    assert get_suite("gravity").agent_note in readme
