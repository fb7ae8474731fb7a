# The two commands: `make run` and `make test`. Everything else is a helper of theirs.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: run soak test check venv frontend browser services lint format messages migrations-check clean

$(STAMP): requirements-web.txt requirements.txt requirements-run.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(STAMP)

frontend:
	bash scripts/build-frontend.sh

browser:
	bash scripts/install-browser.sh

services:
	bash scripts/start-services.sh

# exec: the recipe's shell becomes run.sh, so the SIGTERM that make passes to its child reaches it.
run: venv frontend
	DEBUG=$${DEBUG:-1} exec bash scripts/run.sh $(HOST) $(PORT)

# The soak of make run's own stack (bench/soak.py, docs/performance.md): 20 learners for 20 minutes,
# the worker SIGKILLed three times. SOAK_ARGS="--seconds 90 --learners 5 --kills 1" for a short one.
soak: venv frontend
	$(PY) bench/soak.py $(SOAK_ARGS)

# After marking strings: refresh locale/zh_Hans's catalogue and its committed .mo (needs GNU gettext; docs/i18n.md).
messages: venv
	bash scripts/messages.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: venv
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: venv frontend browser services lint
	bash scripts/test.sh

# The quick loop while editing: lint, then the pure-logic and data-layer tests on SQLite (no browser, no
# sandbox, no worker, nothing slow). Not a substitute for `make test`, which CI runs.
check: venv lint
	env -u DATABASE_URL $(VENV)/bin/pytest -q -n 2 -m "not browser and not sandbox and not integration and not slow"

clean:
	rm -rf $(VENV) var node_modules frontend/node_modules static/dist
