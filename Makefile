# Two commands a user needs: `make run` and `make test`. Everything else is a helper for them.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
INSTALL_LOG := $(VENV)/install.log

.PHONY: run test lint typecheck unit install clean services-down screenshots

# Each stage says what it does in one line; pip's own output goes to a log shown only when it fails.
$(STAMP): pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { echo "error: could not create a virtualenv with '$(PYTHON) -m venv'. On Debian/Ubuntu install it with: apt-get install python3-venv" >&2; exit 1; }
	@echo "install: pip install -e '.[dev]' into $(VENV) (log: $(INSTALL_LOG))"
	@{ $(BIN)/python -m pip install --upgrade pip && $(BIN)/python -m pip install -e '.[dev]'; } >$(INSTALL_LOG) 2>&1 || \
		{ tail -n 40 $(INSTALL_LOG) >&2; echo "error: pip install failed; the whole log is $(INSTALL_LOG)" >&2; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/feedeater run

# Module boundaries (issue #22): import-linter's contracts in pyproject.toml, then no import cycle between
# files; each prints only when it fails.
lint: $(STAMP)
	@echo "lint: ruff check, ruff format --check, import contracts, import cycles"
	@$(BIN)/ruff check --quiet host modules tests bench tools
	@$(BIN)/ruff format --check --quiet host modules tests bench tools
	@$(BIN)/lint-imports --no-logo --no-cache >$(VENV)/lint-imports.log 2>&1 || { cat $(VENV)/lint-imports.log >&2; exit 1; }
	@$(BIN)/python tools/import_cycles.py >/dev/null

typecheck: $(STAMP)
	@echo "typecheck: mypy"
	@$(BIN)/mypy --no-error-summary

# Three workers (pytest-xdist): most tests wait on PostgreSQL, NATS or a subprocess, so three overlap well
# on two cores. worksteal: an idle worker takes queued tests from a busy one, so the few long fault tests
# (scale-out, tap crash, cluster, discord posting) do not run back to back on one worker while the
# others sit idle (with the default `load`, one worker drew them all: 698 s vs 307-523 s for the
# others). `make test PYTEST_ARGS=` runs serially.
PYTEST_ARGS ?= -n 3 --dist worksteal

# tests/quiet.py: nothing per passing test (a failure shows as F or E when it happens), then pytest's
# summary and the 30 slowest tests.
test: $(STAMP) lint typecheck
	@echo "tests: pytest $(PYTEST_ARGS)"
	@$(BIN)/python -m pytest --no-header -p tests.quiet -o console_output_style=classic -p no:cacheprovider \
		--durations=30 $(PYTEST_ARGS)

# The README's console screenshots, taken from the current console by the browser tests (which write
# test-artifacts/*.png on every run); fails rather than keep old pictures when the browser tests skip.
screenshots: $(STAMP)
	@rm -f test-artifacts/overview.png test-artifacts/feed-detail.png test-artifacts/entry.png
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/console/test_browser.py
	@for shot in overview:console-overview feed-detail:console-feed entry:console-entry; do \
		cp test-artifacts/$${shot%%:*}.png docs/screenshots/$${shot##*:}.png || exit 1; done
	@echo "screenshots: docs/screenshots/console-{overview,feed,entry}.png"

services-down: $(STAMP)
	$(BIN)/feedeater services down

clean:
	rm -rf $(VENV) .feedeater
