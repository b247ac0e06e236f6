PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-dev sandbox-deps lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all,dev]"

demo: install
	$(BIN)/discoverygym run gravity --agent expert-adaptive --protocol budget-obs-100

# The sandbox uses bubblewrap when the host has it; as root we install it if missing
# (best effort: the sandbox falls back to weaker isolation, loudly, without it).
sandbox-deps:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 \
	  && apt-get install -y -qq bubblewrap >/dev/null 2>&1)) ; } || true

# pytest exits 5 when it collects nothing; that is not a failure of the build.
test: install-dev sandbox-deps
	$(BIN)/python -m pytest -q || [ $$? -eq 5 ]

lint: install-dev
	$(BIN)/ruff check src tests bench

bench: install-dev
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
