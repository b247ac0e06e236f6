"""What `discoverygym --version` says: the version, the git commit the code came from
when that is known, and which optional extras are installed.

The commit comes from the source checkout around the package (an editable install or
PYTHONPATH) or, in a built wheel, from the file the build recorded (setup.py writes
COMMIT_FILE into the sdist and the wheel). The extras are read from the installed
package's own metadata: an extra counts as installed when every distribution it
requires is."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

from .. import __version__
from .paths import package_dir

#: the file a build writes beside the package's __init__.py (one line: the commit)
COMMIT_FILE = "_build_commit.txt"
#: how long `git` may take to name the checkout's commit
GIT_TIMEOUT_S = 5

_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def checkout_commit(package: Path | None = None) -> str | None:
    """The commit of the git checkout the package lives in (src layout), or None."""
    package = package or package_dir()
    root = package.parent.parent
    if not (root / ".git").exists() or not (root / "pyproject.toml").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    if done.returncode != 0 or not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return None
    try:
        if subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD"],
                          capture_output=True, timeout=GIT_TIMEOUT_S, check=False).returncode:
            commit += "+dirty"  # tracked files changed since the commit
    except (OSError, subprocess.SubprocessError):
        pass
    return commit


def recorded_commit(package: Path | None = None) -> str | None:
    """The commit a build recorded in the package (a wheel or sdist), or None."""
    try:
        text = ((package or package_dir()) / COMMIT_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    commit = text.strip()[:64]
    return commit if re.fullmatch(r"[0-9a-f]{7,40}(\+dirty)?", commit) else None


def commit_line(package: Path | None = None) -> str:
    """Where the code came from, in words."""
    commit = checkout_commit(package)
    if commit:
        return f"commit {commit} (from the checkout)"
    commit = recorded_commit(package)
    if commit:
        return f"commit {commit} (recorded when the package was built)"
    return "commit unknown"


def _distribution_present(name: str, extras: str = "") -> bool:
    """Whether distribution `name` is installed, with what its `extras` (comma-separated,
    e.g. jax's "cuda12") require, one level deep."""
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    wanted = {e.strip() for e in extras.split(",") if e.strip()}
    if not wanted:
        return True
    for line in metadata.requires(name) or []:
        extra, inner = _EXTRA.search(line), _NAME.match(line)
        if extra and inner and extra.group(1) in wanted:
            try:
                metadata.version(inner.group(1))
            except metadata.PackageNotFoundError:
                return False
    return True


def extras_installed(requires: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(installed, missing) extras of the installed distribution. `requires` defaults to
    the distribution's Requires-Dist lines; an extra that names another extra of the
    package (`discoverygym[inspect]`) needs what that one needs."""
    if requires is None:
        try:
            requires = metadata.requires("discoverygym") or []
        except metadata.PackageNotFoundError:
            return [], []
    needs: dict[str, list[str]] = {}
    for line in requires:
        extra, name = _EXTRA.search(line), _NAME.match(line)
        if extra and name:
            needs.setdefault(extra.group(1), []).append(line.split(";")[0].strip())

    def present(requirement: str, seen: frozenset[str]) -> bool:
        name = _NAME.match(requirement).group(1)  # type: ignore[union-attr]
        inner = re.match(r"[^\[]*\[([^\]]+)\]", requirement)
        if name.lower() == "discoverygym" and inner:
            return all(ok(extra.strip(), seen) for extra in inner.group(1).split(","))
        return _distribution_present(name, inner.group(1) if inner else "")

    def ok(extra: str, seen: frozenset[str] = frozenset()) -> bool:
        if extra in seen or extra not in needs:
            return extra in needs
        return all(present(r, seen | {extra}) for r in needs[extra])

    installed = sorted(e for e in needs if ok(e))
    return installed, sorted(set(needs) - set(installed))


def version_text() -> str:
    """The lines `discoverygym --version` prints."""
    installed, missing = extras_installed()
    lines = [f"discoverygym {__version__}", commit_line()]
    if installed or missing:
        lines.append("extras installed: " + (", ".join(installed) or "none"))
        lines.append("extras missing: " + (", ".join(missing) or "none"))
    else:
        lines.append("extras: unknown (the package is not installed, only on the path)")
    return "\n".join(lines)
