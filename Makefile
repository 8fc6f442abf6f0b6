PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test install dev lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(STAMP)

install: $(STAMP)
dev: $(DEVSTAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(DEVSTAMP)
	$(BIN)/python -m pytest

lint: $(DEVSTAMP)
	$(BIN)/ruff check src tests benchmarks examples

clean:
	rm -rf $(VENV) .pytest_cache
