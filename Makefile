# hroof: every target builds its own virtual environment from pyproject.toml,
# so a fresh machine needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv test lint format bench demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever pyproject.toml changes (or the venv is new).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python bench/compare_pycachesim.py
	$(BIN)/python bench/stream_billion.py
	$(BIN)/python bench/kernels_end_to_end.py
	$(BIN)/python bench/new_kernels_vs_naive.py
	$(BIN)/python bench/mrc.py
	$(BIN)/python -m pytest bench -q --benchmark-enable --benchmark-only

demo: $(STAMP)
	$(BIN)/hroof demo

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache hroof-demo
