"""Which optional extra brings a missing module, so a command that needs one says so in
one line instead of a traceback (`make demo` installs the bare package)."""

from __future__ import annotations

#: top-level module -> the extra of pyproject.toml that installs it
MODULE_EXTRAS: dict[str, str] = {
    "jax": "mad", "jaxlib": "mad", "PIL": "mad",
    "astropy": "stargazer", "celerite2": "stargazer", "dynesty": "stargazer",
    "sympy": "tpbench", "yaml": "tpbench", "pyarrow": "tpbench",
    "inspect_ai": "inspect", "openai": "inspect",
    "duckdb": "leaderboard",
    "matplotlib": "report",
    "mcp": "mcp", "anyio": "mcp",
    "gymnasium": "gym",
    "ray": "ray",
    "fastapi": "server", "uvicorn": "server", "httpx": "server", "starlette": "server",
    "verifiers": "rl", "uv": "rl",
    "openenv": "openenv",
    "rdkit": "chem", "pyscf": "chem", "cantera": "chem",
}

#: extras that cannot share the main environment, and how to get theirs
OWN_ENVIRONMENT: dict[str, str] = {
    "rl": "the verifiers door runs in an environment of its own: `make install-rl`, "
          "then `.venv-rl/bin/discoverygym rl ...`",
    "openenv": "the OpenEnv door runs in an environment of its own: `make test-openenv` "
               "builds .venv-openenv",
}


def extra_for(module: str | None) -> str | None:
    """The extra that installs `module` (a dotted name is looked up by its top level)."""
    if not module:
        return None
    return MODULE_EXTRAS.get(module.split(".")[0])


def missing_module_message(exc: ImportError) -> str:
    """One line: what is missing, which extra brings it, and how to install it."""
    module = getattr(exc, "name", None) or ""
    extra = extra_for(module)
    if extra is None:
        return f"a module this needs is not installed ({exc})"
    if extra in OWN_ENVIRONMENT:
        return f"this needs the [{extra}] extra (no module {module!r}); {OWN_ENVIRONMENT[extra]}"
    return (f"this needs the [{extra}] extra (no module {module!r}): `make install-all` "
            f"installs every extra, or pip install -e '.[{extra}]'")
