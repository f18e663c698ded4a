# RankLens: `make run` serves the app on the demo data, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test lint format fuzz bench bench-scale clean

# pip installs without byte-compiling (it compiles one file after another: ~50 s of one core for the test
# environment); SITE_BYTECODE then compiles site-packages on every core, leaving out the packages' own test
# folders (nothing imports them). The .pyc files matter: where PYTHONDONTWRITEBYTECODE is set, Python never
# writes them itself, and every process would compile its imports again (~16 s instead of 5 for the tests').
PIP := $(PY) -m pip install --quiet --no-compile
SITE_BYTECODE := $(PY) -m compileall -qq -j 0 -x '/tests?/' "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" || true

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -r requirements.txt
	$(SITE_BYTECODE)
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements-irds.txt $(VENV)/.runtime
	$(PIP) -r requirements-dev.txt
	touch $@

# Optional Ray engine (python -m core evaluate/fuse --engine ray): installed for the tests, so CI runs the Ray path.
$(VENV)/.ray: requirements-ray.txt $(VENV)/.runtime
	$(PIP) -r requirements-ray.txt
	touch $@

# What .dev and .ray installed, byte-compiled in one pass (each pass walks the whole of site-packages).
$(VENV)/.bytecode: $(VENV)/.dev $(VENV)/.ray
	$(SITE_BYTECODE)
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

# Two pytest runs side by side, each printing its 10 slowest tests: the unit, property and AppTest suites on two
# workers, and the browser tests (tests/e2e: one server and one Chromium, test after test) in a run of their own,
# which mostly waits on the server and the browser (~90 s of CPU in ~4 min), so it costs the other run little.
# The browser run's output is held back until it ends (it would break into the other's progress lines).
# `make test` fails if either run does; Ctrl-C stops both.
test: $(VENV)/.bytecode
	$(BYTECODE)
	$(MAKE) --no-print-directory -j2 test-unit test-browser

.PHONY: test-unit test-browser
# UNIT_WORKERS / UNIT_DIST: pytest-xdist's workers and their scheduling for the unit run.
UNIT_WORKERS ?= 2
UNIT_DIST ?= load
test-unit: $(VENV)/.bytecode
	$(PY) -m pytest -n $(UNIT_WORKERS) --dist $(UNIT_DIST) -m "not e2e" -q --durations=10 tests

E2E := $(PY) -m pytest -m e2e -q --durations=10 -o cache_dir=.pytest_cache/e2e tests/e2e
test-browser: $(VENV)/.bytecode
	@echo '$(E2E)  (output when it ends)'
	@log=$$(mktemp); trap 'rm -f "$$log"' EXIT; status=0; $(E2E) >"$$log" 2>&1 || status=$$?; \
	printf '\n--- %s\n' 'browser tests (tests/e2e):'; cat "$$log"; exit $$status

# Every reader under the fuzzer for longer than `make test` does (tests/test_fuzz_readers.py's "fuzz"
# profile: FUZZ_SCALE times the CI examples, fresh seeds, failures kept in .hypothesis/). A finding
# becomes a small file in tests/data/fuzz/ (its name says the reader), replayed by every `make test`.
FUZZ_SCALE ?= 40
fuzz: $(VENV)/.dev
	RANKLENS_FUZZ=fuzz RANKLENS_FUZZ_SCALE=$(FUZZ_SCALE) $(PY) -m pytest -n 2 -q tests/test_fuzz_readers.py

# Lint and format check (ruff), types (mypy on core/), import contracts (import-linter): see pyproject.toml.
lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

format: $(VENV)/.dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The package as a user gets it (.ci/wheel_smoke.sh, ~12 s; CI runs it beside `make lint` and `make test`): the wheel built with
# `pip wheel . --no-deps`, installed in a fresh venv outside the checkout (its dependencies: this .venv's, through a
# .pth), then from another folder `ranklens --version`, `ranklens demo`, `ranklens evaluate` and `ranklens serve`
# answering /_stcore/health.
.PHONY: wheel-smoke
wheel-smoke: $(VENV)/.runtime
	PY="$(abspath $(PY))" bash .ci/wheel_smoke.sh

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
