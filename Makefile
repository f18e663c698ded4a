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

run: $(VENV)/.runtime
	$(PY) -m streamlit run app.py --server.port $(PORT)

test: $(VENV)/.dev
	$(PY) -m pytest -n 2 --dist loadgroup -q tests

bench: $(VENV)/.dev
	$(PY) bench/evaluate.py
	$(PY) bench/fusion.py
	$(PY) bench/leaderboard.py
	$(PY) bench/rerank.py

clean:
	rm -rf $(VENV) .pytest_cache
