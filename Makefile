# RankLens: `make run` serves the app on the demo data, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PORT   ?= 8501

.PHONY: run test bench clean

$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# Same as `streamlit run app.py`, minus Streamlit's first-request deep-link notice (see pages/common/serve.py).
run: $(VENV)/.runtime
	$(PY) -m pages.common.serve --server.port $(PORT)

# Unit, property and AppTest suites in parallel, then the browser tests on their own.
test: $(VENV)/.dev
	$(PY) -m pytest -n 2 -m "not e2e" -q tests
	$(PY) -m pytest -m e2e -q tests/e2e

bench: $(VENV)/.dev
	$(PY) bench/evaluate.py
	$(PY) bench/fusion.py
	$(PY) bench/leaderboard.py
	$(PY) bench/rerank.py

clean:
	rm -rf $(VENV) .pytest_cache
