# Exactly Once, For Real: the two commands are `make lab` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
NOTEBOOK_DIRS := notebooks labs solutions
# nbval runs each notebook in a fresh kernel; a cell may wait for a real Spark driver.
# nbcapture keeps each executed notebook in .state/executed for the browser test.
# Notebooks run NBVAL_WORKERS at a time, a module's notebooks on one worker (much of a lesson is a
# driver booting or a batch draining, so two share two cores well); NBVAL_WORKERS=0 runs them one by one.
NBVAL_WORKERS ?= 2
NBVAL := --nbval-lax --nbval-cell-timeout=600 --nbval-sanitize-with tests/nbval-sanitize.cfg \
	-p deliverylab.stack.nbcapture -n $(NBVAL_WORKERS) --dist loadscope
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -rs

.PHONY: setup lab test test-cluster stop bench doctor clean site

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
	$(PYTEST) --ignore=tests/browser -m "not cluster" tests || status=1; \
	$(PYTEST) $(NBVAL) $(NOTEBOOK_DIRS) || status=1; \
	$(PYTEST) tests/browser || status=1; \
	$(PY) -m deliverylab.stack.nbcapture; \
	$(PY) -m deliverylab stack down; \
	exit $$status

## test-cluster: the cluster tests (a Spark standalone cluster, three Kafka brokers, kills of a worker,
## an executor and a partition leader), then lesson 00 on the Spark cluster; everything started is stopped
test-cluster: setup
	$(PY) -m deliverylab stack up
	@status=0; \
	$(PYTEST) -m cluster tests/stack || status=1; \
	$(PY) -m deliverylab cluster up || status=1; \
	DELIVERYLAB_SPARK_MASTER=spark://127.0.0.1:7077 $(PYTEST) $(NBVAL) notebooks/00-setup-and-tour.ipynb || status=1; \
	$(PY) -m deliverylab cluster down; \
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
	$(PY) -m deliverylab.cluster_bench

doctor: setup
	$(PY) -m deliverylab doctor

## site: every lesson, executed, as HTML with its charts in .state/site/ (lessons with no fresh executed copy run first)
site: setup
	$(PY) -m deliverylab site

## clean: remove the venv and all local state (jars, broker data, lesson tables)
clean: stop
	rm -rf $(VENV) .state
