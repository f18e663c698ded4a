# RankLens: `make run` serves the app on the demo data, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test lint format bench bench-scale clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# Optional Ray engine (python -m core evaluate/fuse --engine ray): installed for the tests, so CI runs the Ray path.
$(VENV)/.ray: requirements-ray.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-ray.txt
	touch $@

# The project's bytecode, written once (Python reads .pyc even where PYTHONDONTWRITEBYTECODE stops it writing them):
# every CLI process the tests spawn and the server's first imports then skip compiling core/ (~0.2 s a process).
BYTECODE := $(PY) -m compileall -q -j 0 core pages app.py >/dev/null

# Same as `streamlit run app.py`, minus Streamlit's first-request deep-link notice (see pages/common/serve.py).
# WORKSPACE=path opens that workspace file in every new session (links may name files beside it).
WORKSPACE ?=
run: $(VENV)/.runtime
	$(BYTECODE)
	$(PY) -m pages.common.serve --server.port $(PORT) $(if $(WORKSPACE),--workspace "$(WORKSPACE)")

# Unit, property and AppTest suites in parallel, then the browser tests on their own.
test: $(VENV)/.dev $(VENV)/.ray
	$(BYTECODE)
	$(PY) -m pytest -n 2 -m "not e2e" -q tests
	$(PY) -m pytest -m e2e -q tests/e2e

# Lint and format check (ruff), types (mypy on core/), import contracts (import-linter): see pyproject.toml.
lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

format: $(VENV)/.dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(VENV)/.dev
	$(PY) bench/evaluate.py
	$(PY) bench/fusion.py
	$(PY) bench/leaderboard.py
	$(PY) bench/rerank.py
	$(PY) bench/workspace.py
	$(PY) bench/app.py
	$(PY) bench/load.py

# Engines past one machine (generates seeded runs in a temporary folder; --rows 50M,500M for the issue's sizes).
bench-scale: $(VENV)/.dev $(VENV)/.ray
	$(PY) bench/scale.py

clean:
	rm -rf $(VENV) .pytest_cache
