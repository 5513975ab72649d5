# hroof: every target builds its own virtual environment from pyproject.toml,
# so a fresh machine needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv warm test check coverage lint format bench demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall whenever pyproject.toml changes (or the venv is new).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Every kernel compiled ahead, a group per process (loaded from the cache when done already).
warm: $(STAMP)
	$(BIN)/hroof warm

# The full suite: what CI runs (kernels compiled first, in parallel; then the tests on
# every CPU, one pytest worker each).
test: $(STAMP)
	$(BIN)/hroof warm --quiet
	$(BIN)/python -m pytest -q -n auto

# The fast lane for the edit-test loop (about a minute on two CPUs): no test marked slow, and each
# hypothesis property on a tenth of its examples.
check: $(STAMP)
	$(BIN)/hroof warm --quiet
	HROOF_TEST_LANE=check $(BIN)/python -m pytest -q -n auto -m "not slow" -p no:cacheprovider

# Line coverage of hroof/: the full suite compiled, then the kernels' own tests (fast
# lane) again with NUMBA_DISABLE_JIT=1 so the lines of the Numba kernels count too.
# Only those files: the whole fast lane as plain Python runs for hours (the story tests
# simulate whole sweeps); these take about 2 minutes.
KERNEL_TESTS := tests/test_hand_cases.py tests/test_shadow.py tests/test_inclusion.py \
	tests/test_prefetch.py tests/test_sampling.py tests/test_multicore.py tests/test_mrc.py \
	tests/test_simulator_vs_naive.py tests/test_fastpath.py tests/test_trace_io.py
coverage: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --cov=hroof --cov-report=
	NUMBA_DISABLE_JIT=1 HROOF_TEST_LANE=check $(BIN)/python -m pytest -q -m "not slow" \
		-p no:cacheprovider -W ignore::RuntimeWarning --cov=hroof --cov-append \
		--cov-report=term:skip-covered --cov-report=html:coverage-html $(KERNEL_TESTS)

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
	$(BIN)/hroof warm
	$(BIN)/hroof demo

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache hroof-demo coverage-html .coverage
