# Two commands a user needs: `make run` and `make test`. Everything else is a helper for them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit install clean services-down

$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { echo "error: could not create a virtualenv with '$(PYTHON) -m venv'. On Debian/Ubuntu install it with: apt-get install python3-venv" >&2; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/feedeater run

lint: $(STAMP)
	$(BIN)/ruff check host modules tests bench
	$(BIN)/ruff format --check host modules tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Three workers (pytest-xdist): most tests wait on PostgreSQL, NATS or a subprocess, so three overlap well
# on two cores. `make test PYTEST_ARGS=` runs serially.
PYTEST_ARGS ?= -n 3

test: $(STAMP) lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider --durations=30 $(PYTEST_ARGS)

services-down: $(STAMP)
	$(BIN)/feedeater services down

clean:
	rm -rf $(VENV) .feedeater
