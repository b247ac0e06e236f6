"""MkDocs hook: the READMEs that live beside their code join the site as pages, so
each text has one source (the README) and the site shows it."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "discoverygym"

#: site page -> the README it shows
PAGES = {
    **{f"suites/{suite}.md": PACKAGE / "suites" / suite / "README.md"
       for suite in ("gravity", "stargazer", "mad", "tpbench", "packages")},
    "sandbox.md": PACKAGE / "sandbox" / "README.md",
    "doors/inspect.md": PACKAGE / "doors" / "inspect" / "README.md",
    "doors/harbor.md": PACKAGE / "doors" / "harbor" / "README.md",
}


_LINK = re.compile(r"\]\(([^)#\s]+\.md)(#[^)\s]*)?\)")


def _relinked(text: str, readme: Path, uri: str) -> str:
    """A README's relative link to another README shown on the site points at its page."""
    page_of = {path.resolve(): page for page, path in PAGES.items()}

    def swap(match: re.Match) -> str:
        target = (readme.parent / match.group(1)).resolve()
        if target not in page_of:
            return match.group(0)
        link = posixpath.relpath(page_of[target], posixpath.dirname(uri) or ".")
        return f"]({link}{match.group(2) or ''})"

    return _LINK.sub(swap, text)


def on_files(files, config):
    for uri, readme in PAGES.items():
        text = _relinked(readme.read_text(encoding="utf-8"), readme, uri)
        files.append(File.generated(config, uri, content=text))
    return files
