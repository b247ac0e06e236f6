PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast test-openenv test-rl test-wheel install install-all install-rl install-dev system-deps harbor-venv lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install -q -e .

# Every extra that shares .venv: what the README's commands after `make demo` need.
install-all: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all]"

install-dev: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all,dev]"

demo: install
	$(BIN)/discoverygym run gravity --agent expert-adaptive --protocol budget-obs-100

# System packages the tests use when present: bubblewrap (the sandbox's strongest
# isolation) and chromium (renders the HTML report). As root with apt we install them
# if missing; best effort: without them the sandbox falls back loudly to weaker
# isolation and the rendering test skips with the reason.
SYSTEM_DEPS := bwrap:bubblewrap chromium:chromium
system-deps:
	@for pair in $(SYSTEM_DEPS); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 && continue; \
	  [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 || continue; \
	  echo "installing $$pkg (apt)"; \
	  apt-get install -y -qq $$pkg >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1; \
	    apt-get install -y -qq $$pkg >/dev/null 2>&1; } || echo "could not install $$pkg"; \
	done; true

# Harbor (for the Harbor export's lint and trial tests) needs Python >= 3.12 and is never a
# dependency of the package: it gets its own venv (about 90 s to install). Best effort:
# without Python 3.12 the Harbor tests skip with the reason.
HARBOR_VENV := .venv-harbor
HARBOR_PY ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python) $(shell command -v python3.12))
harbor-venv:
	@[ -x $(HARBOR_VENV)/bin/harbor ] && exit 0; \
	[ -n "$(HARBOR_PY)" ] || { echo "no Python 3.12: the Harbor tests will skip"; exit 0; }; \
	$(HARBOR_PY) -m venv $(HARBOR_VENV) && $(HARBOR_VENV)/bin/python -m pip install -q \
	  harbor==0.26.0 || echo "could not install Harbor: the Harbor tests will skip"

# pytest exits 5 when it collects nothing; that is not a failure of the build.
# Tests run in TEST_WORKERS processes (pytest-xdist, in [dev]); TEST_WORKERS=0 runs them
# in one (README "Tests" gives the times measured with each).
TEST_WORKERS ?= 2
XDIST = $$($(BIN)/python -c "import xdist" 2>/dev/null && echo "-n $(TEST_WORKERS)")
test: install-dev system-deps harbor-venv
	$(BIN)/python -m pytest -q $(XDIST) || [ $$? -eq 5 ]
	$(MAKE) test-openenv
	$(MAKE) test-rl
	$(MAKE) test-wheel

# The package as users get it: build the sdist and wheel, twine-check them, install the
# wheel with [all] into a fresh venv outside the checkout and run the smoke lane there
# from an empty folder (tools/wheel_smoke.sh says what it runs; README "Tests" its time).
test-wheel: install-dev
	tools/wheel_smoke.sh $(BIN)/python

# Between edits: the tests not marked slow (tests/conftest.py marks whole modules slow
# in one list), in .venv as it is (it installs the dev extras only when pytest or
# pytest-xdist is missing, as after `make demo`; no side environments). `make test`
# before a commit runs everything. README "Tests" says which to use when.
test-fast: $(BIN)/python
	@$(BIN)/python -c "import pytest, xdist" 2>/dev/null || $(MAKE) install-dev
	$(BIN)/python -m pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

# The OpenEnv door in an environment of its own: openenv needs mcp<2 (through fastmcp),
# the MCP door needs mcp 2, so [openenv] is not in [all] (docs/doors.md).
OPENENV_VENV := .venv-openenv
$(OPENENV_VENV)/bin/python:
	$(PY) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install -q --upgrade pip

test-openenv: $(OPENENV_VENV)/bin/python
	$(OPENENV_VENV)/bin/python -m pip install -q -e ".[openenv,gym,dev]"
	$(OPENENV_VENV)/bin/python -m pytest -q tests/doors/openenv/test_openenv_door.py

# The verifiers door ([rl]) cannot share .venv with [inspect] (openai<3 against
# openai>=3.4), so it has an environment of its own. `discoverygym rl setup` installs
# the chat harness's helper (uv, with a lock) once, so the rollout tests run offline.
RL_VENV := .venv-rl
RL_TESTS := tests/doors/verifiers/test_verifiers_splits.py tests/doors/verifiers/test_verifiers_toolset.py tests/doors/verifiers/test_verifiers_retries.py \
	tests/doors/verifiers/test_verifiers_rollout.py
$(RL_VENV)/bin/python:
	$(PY) -m venv $(RL_VENV)
	$(RL_VENV)/bin/python -m pip install -q --upgrade pip

install-rl: $(RL_VENV)/bin/python
	$(RL_VENV)/bin/python -m pip install -q -e ".[rl,gym,dev]"
	$(RL_VENV)/bin/discoverygym rl setup

test-rl:
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "test-rl: verifiers needs Python >= 3.11 ($(PY) is older); skipped"; exit 0; }; \
	$(MAKE) install-rl && $(RL_VENV)/bin/python -m pytest -q $(RL_TESTS)

# ruff, and the layering contracts of pyproject.toml's [tool.importlinter] (the tests
# check them too: tests/project/test_import_contracts.py).
lint: install-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports --no-cache

bench: install-dev
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf $(VENV) $(HARBOR_VENV) $(OPENENV_VENV) $(RL_VENV) build dist site *.egg-info src/*.egg-info .pytest_cache
