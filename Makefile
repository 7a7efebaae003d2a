# Two commands on a fresh machine (Python 3.11 with venv):
#   make demo   creates .venv, installs attnbench, trains LRA ListOps (cpu preset, generated data)
#   make test   creates .venv, installs attnbench with test extras, runs ruff and the test suite
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
WORKDIR ?= runs/listops-cpu

.PHONY: demo test test-slow lint venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(BIN)/python -m scripts.train --config configs/lra/listops.py:preset=cpu --workdir $(WORKDIR)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# `make test` (what CI runs) stays under 10 minutes on 2 cores; `make test-slow` runs the
# longer tier (tests marked `slow`: the full LRA task x mechanism grid, extra fault injections).
test: lint
	$(BIN)/python -m pytest -q -n 2 --durations=15 -m "not slow"

test-slow: venv
	$(BIN)/python -m pytest -q -n 2 --durations=15 -m slow

clean:
	rm -rf $(VENV) runs
