# Exactly Once, For Real: the two commands are `make lab` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
NOTEBOOK_DIRS := notebooks labs solutions
# nbval runs each notebook in a fresh kernel; a cell may wait for a real Spark driver.
# nbcapture keeps each executed notebook in .state/executed for the browser test.
NBVAL := --nbval-lax --nbval-cell-timeout=600 --nbval-sanitize-with tests/nbval-sanitize.cfg \
	-p deliverylab.stack.nbcapture
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -rs

.PHONY: setup lab test stop bench doctor clean

$(INSTALLED): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or newer is needed, found " + sys.version.split()[0] + ". Run: make PYTHON=python3.11 ...")'
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(INSTALLED)

## setup: venv, Python packages, JVM jars (network needed once; offline afterwards)
setup: $(INSTALLED)
	$(PY) -m deliverylab setup

## lab: setup, start the broker, open JupyterLab on lesson 00 (if JupyterLab cannot start, the broker is stopped again)
lab: setup
	$(PY) -m deliverylab stack up
	@$(PY) -m deliverylab jupyter lab $(LAB_OPTIONS); status=$$?; \
	if [ $$status -eq 2 ]; then $(PY) -m deliverylab stack down; fi; exit $$status

## test: setup, then pytest, nbval over every notebook, and the browser test; the broker is stopped at the end
test: setup
	$(PY) -m deliverylab stack up
	@rm -rf .state/executed; status=0; \
	$(PY) -m deliverylab labs check || status=1; \
	$(PYTEST) --ignore=tests/browser tests || status=1; \
	$(PYTEST) $(NBVAL) $(NOTEBOOK_DIRS) || status=1; \
	$(PYTEST) tests/browser || status=1; \
	$(PY) -m deliverylab.stack.nbcapture; \
	$(PY) -m deliverylab stack down; \
	exit $$status

## stop: stop JupyterLab and the broker
stop:
	-$(PY) -m deliverylab jupyter stop
	-$(PY) -m deliverylab stack down

## bench: print the course's timing and memory figures
bench: setup
	$(PY) -m deliverylab stack up
	$(PY) -m deliverylab.bench

doctor: setup
	$(PY) -m deliverylab doctor

## clean: remove the venv and all local state (jars, broker data, lesson tables)
clean: stop
	rm -rf $(VENV) .state
