# Exactly Once, For Real: the two commands are `make lab` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
NOTEBOOK_DIRS := notebooks labs solutions
# nbval runs each notebook in a fresh kernel; a cell may wait for a real Spark driver
NBVAL := --nbval-lax --nbval-cell-timeout=600 --nbval-sanitize-with tests/nbval-sanitize.cfg -p no:cacheprovider

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

## lab: setup, start the broker, open JupyterLab on lesson 00
lab: setup
	$(PY) -m deliverylab stack up
	$(PY) -m deliverylab jupyter lab

## test: setup, then pytest and nbval over every notebook; the broker is stopped at the end
test: setup
	$(PY) -m deliverylab stack up
	@status=0; \
	$(PY) -m deliverylab labs check || status=1; \
	$(PY) -m pytest -q -p no:cacheprovider tests || status=1; \
	$(PY) -m pytest -q $(NBVAL) $(NOTEBOOK_DIRS) || status=1; \
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
