# One target per routine task. `make run` and `make test` are the README's two commands.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Stamp files make re-runs instant while pyproject.toml is unchanged.
INSTALLED := $(VENV)/.installed
TEST_INSTALLED := $(VENV)/.test-installed

.PHONY: install install-test run demo test lint format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(INSTALLED): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_INSTALLED): pyproject.toml | $(BIN)/python
	# py-irt needs torch: the pinned build first, so pip resolves torch before py-irt does. Plain `torch==2.13.0`
	# gets the CPU build only where pip finds a local CPU wheel (this project's machines, through pip's find-links);
	# elsewhere PyPI serves the multi-GB CUDA build: add `--index-url https://download.pytorch.org/whl/cpu` by hand.
	# py-irt (and so torch) is installed on Python < 3.12 only: skipped on newer ones; a failing pip still fails.
	@if $(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then \
		echo "Python >= 3.12: no py-irt, so no torch"; \
	else \
		echo "$(BIN)/pip install --quiet torch==2.13.0"; \
		$(BIN)/pip install --quiet torch==2.13.0; \
	fi
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(INSTALLED)

install: $(INSTALLED)

install-test: $(TEST_INSTALLED)

## The main job: the hub on its embedded default (SQLite, local files, in-process queue) with demo data.
## `make run PORT=8080` listens elsewhere; invite links follow the port unless HUB_PUBLIC_URL is set.
PORT ?= 8000
## The demo scores embedding-average with gensim's tiny test vectors unless HUB_WORD_VECTORS names real ones.
run: install
	HUB_WORD_VECTORS="$${HUB_WORD_VECTORS-gensim-test}" $(BIN)/chateval serve --demo --port $(PORT)

## A demo evaluation in the terminal with the offline toolkit (no server).
demo: install
	$(BIN)/chateval datasets list
	$(BIN)/chateval evaluate --dataset hub-open-v1 --responses baselines/hub-open-v1/unigram.txt \
		--loglik baselines/hub-open-v1/unigram.loglik.jsonl

## Installs what tests need, checks style, runs the whole suite.
test: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy evaluation
	$(BIN)/python -m pytest

lint: install-test
	$(BIN)/ruff check .

format: install-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: install-test  # the original code it compares with uses NLTK (a test extra)
	$(BIN)/python scripts/bench_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
