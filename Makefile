PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-dev lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install -q -e .

install-dev: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all,dev]"

demo: install
	$(BIN)/discoverygym run gravity --agent expert-adaptive --protocol budget-obs-100

test: install-dev
	$(BIN)/python -m pytest -q

lint: install-dev
	$(BIN)/ruff check src tests bench

bench: install-dev
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f; done

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
