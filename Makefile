# Exactly Once, For Real: the two commands are `make lab` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
# Module 10's kernel, "Python 3 (Spark 4.1 + Iceberg)": a venv of its own with pyspark 4.1.3 and its own jars
# (requirements-iceberg.txt says why; deliverylab/stack/kernels.py)
ICEBERG_VENV := .venv-iceberg
ICEBERG_PY := $(ICEBERG_VENV)/bin/python
ICEBERG_INSTALLED := $(ICEBERG_VENV)/.installed
NOTEBOOK_DIRS := notebooks labs solutions
# nbval runs each notebook in a fresh kernel; a cell may wait for a real Spark driver.
# nbcapture keeps each executed notebook in .state/executed for the browser test.
# A kernel gets 180 s to start (nbval's default is 60): on two cores busy with Spark drivers, a kernel
# start once took longer than 60 s and failed a whole notebook's cells.
# Notebooks run NBVAL_WORKERS at a time, a module's notebooks on one worker: much of a lesson is a driver
# booting or a batch draining, so one at a time leaves a core idle. Two at a time took as long as three
# (574 s against 571 s for every notebook, measured in a row) and 5 % less CPU (1041 against 1099 CPU
# seconds): a third notebook only makes the other two wait, and what waits (pipelines polling their topic,
# standbys, the broker) still costs CPU. NBVAL_WORKERS=0 runs them one by one.
NBVAL_WORKERS ?= 2
NBVAL_ONE_BY_ONE := --nbval-lax --nbval-cell-timeout=600 --nbval-kernel-startup-timeout=180 --nbval-sanitize-with tests/nbval-sanitize.cfg \
	-p deliverylab.stack.nbcapture
NBVAL := $(NBVAL_ONE_BY_ONE) -n $(NBVAL_WORKERS) --dist loadscope
# Module 09 runs on the local Spark and Kafka clusters (course.CLUSTER_MODULES): `make test-cluster` runs
# its notebooks, one at a time; `make test` runs its unit tests and the cluster smoke only.
CLUSTER_NOTEBOOKS := --ignore-glob="*/09-*.ipynb"
# Lessons 01, 04 and 06 run as learner ada who joined a class broker with logins, ACLs and quotas
# (stack/classrun.py; the course's own broker moved, for them, to ports where nothing listens, so nothing can
# quietly use it): every Kafka path they take logs in and stays inside her ACLs, and their checked outputs
# are the same as on the course's broker. Their labs' solutions, their modules' unit tests and the browser
# test's Run All of lesson 01 run on the course's own broker.
AS_A_LEARNER := notebooks/01-three-guarantees.ipynb notebooks/04-at-least-once.ipynb notebooks/06-kafka-end-to-end.ipynb
# Unit tests run UNIT_WORKERS at a time, a file per worker: the crash-point grid (tests/crashlab/test_chaos.py)
# keeps both cores busy for minutes while the other tests, which mostly wait on the broker, use about
# half a core; side by side they finish about a minute sooner. The test that stops and starts a
# broker does it to one of its own. UNIT_WORKERS=0 runs them one by one.
UNIT_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -p no:cacheprovider -rs
PIP_INSTALL := PYTHONPATH=. $(PY) -m deliverylab pip install --disable-pip-version-check --no-compile
ICEBERG_PIP_INSTALL := PYTHONPATH=. $(ICEBERG_PY) -m deliverylab pip install --disable-pip-version-check --no-compile

.PHONY: setup lab update test test-stress test-labs test-cluster test-run-all stop bench doctor clean site

$(INSTALLED): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or newer is needed, found " + sys.version.split()[0] + ". Run: make PYTHON=python3.11 ...")'
	@echo "setting up the course (the first time only, with network): a Python venv and its packages, the JVM jars, then a class archive. Usually 5-15 minutes; each step says what it does, at least every 10 s."
	@$(PYTHON) -m venv $(VENV)
	@# pyspark first: the JVM jars resolve with the Ivy inside it (mostly waiting on Maven Central)
	@# while pip installs everything else, which saves a fresh setup about 25 s. --no-compile: Python
	@# compiles a module on its first import, so only what the course imports gets compiled (8 s less).
	@# --use-pep517: pyspark comes as a source archive; pip's legacy setup.py build of it prints a DEPRECATION warning.
	@# `deliverylab pip` is pip, condensed to a line at least every 10 s saying what it does (stack/heartbeat.py)
	@$(PIP_INSTALL) --use-pep517 "$$(grep -E '^pyspark==' requirements.txt)"
	@echo "resolving the JVM jars while pip installs the other packages (their lines interleave) ..."
	@PYTHONPATH=. $(PY) -m deliverylab setup --jars-only & jars=$$!; \
	$(PIP_INSTALL) -r requirements.txt && $(PIP_INSTALL) --no-deps -e .; pip=$$?; \
	wait $$jars; jars=$$?; \
	if [ $$pip -ne 0 ]; then echo "pip could not install requirements.txt (see above)"; exit $$pip; fi; exit $$jars
	@touch $(INSTALLED)

# The same steps for module 10's venv: pyspark 4.1.3 first, then its jars (.state/jars/spark41) resolve while pip
# installs the rest. The venv holds a .gitignore of its own (git ignores it; Python 3.13's venv writes one too).
$(ICEBERG_INSTALLED): requirements-iceberg.txt pyproject.toml
	@echo "setting up module 10's kernel, Python 3 (Spark 4.1 + Iceberg) (the first time only, with network): a second venv with pyspark 4.1.3, its JVM jars (Iceberg's runtime among them), then its class archive. Usually 3-10 minutes."
	@$(PYTHON) -m venv $(ICEBERG_VENV)
	@echo '*' > $(ICEBERG_VENV)/.gitignore
	@$(ICEBERG_PIP_INSTALL) --use-pep517 "$$(grep -E '^pyspark==' requirements-iceberg.txt)"
	@echo "resolving module 10's JVM jars while pip installs its other packages (their lines interleave) ..."
	@PYTHONPATH=. $(ICEBERG_PY) -m deliverylab setup --jars-only & jars=$$!; \
	$(ICEBERG_PIP_INSTALL) -r requirements-iceberg.txt && $(ICEBERG_PIP_INSTALL) --no-deps -e .; pip=$$?; \
	wait $$jars; jars=$$?; \
	if [ $$pip -ne 0 ]; then echo "pip could not install requirements-iceberg.txt (see above)"; exit $$pip; fi; exit $$jars
	@touch $(ICEBERG_INSTALLED)

## setup: venv, Python packages, JVM jars (network needed once; offline afterwards); the same for module 10's
## kernel (a second venv, .venv-iceberg: Spark 4.1 + Iceberg), and that kernel made known to JupyterLab
setup: $(INSTALLED) $(ICEBERG_INSTALLED)
	@$(PY) -m deliverylab setup --iceberg-python $(abspath $(ICEBERG_PY))
	@$(ICEBERG_PY) -m deliverylab setup

## lab: setup, start the broker, open JupyterLab on lesson 00. Run again while JupyterLab runs, it prints the
## address and changes nothing; if JupyterLab cannot start, a broker that this same command started is stopped again
lab site: export PYTHONUNBUFFERED := 1
lab: setup
	@$(PY) -m deliverylab stack status >/dev/null 2>&1; broker_was_up=$$?; \
	$(PY) -m deliverylab stack up || exit $$?; \
	$(PY) -m deliverylab jupyter lab $(LAB_OPTIONS); status=$$?; \
	if [ $$status -eq 2 ] && [ $$broker_was_up -ne 0 ]; then $(PY) -m deliverylab stack down; fi; exit $$status

## update: pull the course's updates, then bring them into your copies in my-work/ (a copy you edited is
## kept, and the new version is put next to it; a copy you ran keeps its outputs, and the whole earlier run is
## kept beside it if the update changed a cell that had some); `make lab` does the second step too
update:
	@echo "pulling the course's updates (git pull --ff-only) ..."
	@git pull --ff-only
	@$(MAKE) --no-print-directory setup
	@$(PY) -m deliverylab mywork

## test: setup, then pytest, nbval over every notebook (lessons 01, 04 and 06 as a learner logged in to a class
## broker with logins and ACLs), and the browser test; the broker is stopped at the end, and the run ends with a
## table of its phases: wall and CPU seconds (user+sys of every process a phase started; deliverylab/testrun.py),
## the slowest unit tests and each notebook's time. Compare CPU seconds between runs: wall time on a shared
## two-core machine varies 2x from day to day.
## (DELIVERYLAB_REDUCED=1: the capstone's matrix runs a sample of its variants; DELIVERYLAB_STANDBY_WARM_UP=0:
## standby drivers skip their warm-up, which only takes CPU from the tests on two busy cores; see deliverylab/config.py)
UNIT_REPORT := .state/testrun/unit-tests.xml
# Module 10's tests that read Iceberg tables with pyiceberg run again with the Iceberg venv's Python (under the main
# venv they skip what needs pyiceberg or Spark 4.1); its lab's planted answers run in `make test-labs`.
ICEBERG_UNIT_TESTS := tests/modules/test_m10_tables.py tests/crashlab/test_iceberg_variants.py
test:
	@rm -rf .state/executed $(UNIT_REPORT); DELIVERYLAB_STANDBY_WARM_UP=0 $(PYTHON) -m deliverylab.testrun $(TESTRUN_OPTIONS) \
	--first 'setup: $(MAKE) --no-print-directory setup' \
	--first 'broker up: $(PY) -m deliverylab stack up' \
	--phase 'labs check: $(PY) -m deliverylab labs check' \
	--phase 'unit tests: $(PYTEST) -n $(UNIT_WORKERS) --dist loadfile --junitxml=$(UNIT_REPORT) --ignore=tests/browser --ignore=tests/labs -m "not cluster" tests' \
	--phase 'unit tests on the Iceberg kernel: $(ICEBERG_PY) -m pytest -q -p no:cacheprovider -rs $(ICEBERG_UNIT_TESTS)' \
	--phase 'notebooks: DELIVERYLAB_REDUCED=1 $(PYTEST) $(NBVAL) $(CLUSTER_NOTEBOOKS) $(addprefix --ignore=,$(AS_A_LEARNER)) $(NOTEBOOK_DIRS)' \
	--phase 'lessons as ada: DELIVERYLAB_REDUCED=1 $(PY) -m deliverylab.stack.classrun --learner ada -- $(PYTEST) $(NBVAL) $(AS_A_LEARNER)' \
	--phase 'browser: $(PYTEST) tests/browser -m "not run_all"' \
	--finally 'broker down: $(PY) -m deliverylab stack down' \
	--junit $(UNIT_REPORT)

## test-stress: make test while a busy process holds one of the two cores for the whole run (a learner's laptop
## with something else running): it must pass too, since no test asserts how fast the machine is
test-stress:
	@$(MAKE) --no-print-directory test TESTRUN_OPTIONS=--hog

## test-labs: every lab's checks against wrong answers planted in the shapes learners write them, each run
## for real (the broker, a Spark driver per answer, real SIGKILLs; lab 09's on the two local clusters, started
## and stopped here): every one must end in FAIL with a hint or one line that says what to do, and the right
## answers must pass. Slower than make test, so make test runs only the checks' fast tests
test-labs: setup
	$(PY) -m deliverylab stack up
	@status=0; export DELIVERYLAB_STANDBY_WARM_UP=0; \
	$(PYTEST) -m "not cluster" tests/labs || status=1; \
	$(ICEBERG_PY) -m pytest -q -p no:cacheprovider -rs -m "not cluster" tests/labs/test_lab10_planted.py || status=1; \
	$(PY) -m deliverylab cluster up || status=1; \
	$(PYTEST) -m cluster tests/labs || status=1; \
	$(PY) -m deliverylab cluster down; \
	$(PY) -m deliverylab stack down; \
	exit $$status

## test-cluster: the cluster tests (a Spark standalone cluster, three Kafka brokers, kills of a worker,
## an executor and a partition leader, a chaos run per exactly-once variant with a broker killed), lesson 00
## on the Spark cluster, module 09's notebooks and what they show in the browser; everything started is stopped
test-cluster: setup
	$(PY) -m deliverylab stack up
	@status=0; \
	$(PYTEST) -m cluster tests/stack || status=1; \
	$(PY) -m deliverylab cluster up || status=1; \
	DELIVERYLAB_SPARK_MASTER=spark://127.0.0.1:7077 $(PYTEST) $(NBVAL) notebooks/00-setup-and-tour.ipynb || status=1; \
	$(PYTEST) $(NBVAL_ONE_BY_ONE) notebooks/09-*.ipynb solutions/09-*.ipynb labs/09-*.ipynb || status=1; \
	$(PYTEST) tests/browser -k 09- || status=1; \
	$(PY) -m deliverylab cluster down; \
	$(PY) -m deliverylab stack down; \
	exit $$status

## test-run-all: lessons 04, 08 and 10 (on its own kernel) run with Run All in Chromium, as a learner runs them (the capstone's full
## matrix; about 10 minutes alone): each long cell shows a status line that says what it waits for
test-run-all: setup
	$(PY) -m deliverylab stack up
	@status=0; $(PYTEST) tests/browser -m run_all || status=1; $(PY) -m deliverylab stack down; exit $$status

## stop: stop JupyterLab (and with it every notebook kernel, module 10's too) and the broker, and any crash-lab
## driver either kernel left running
stop:
	-$(PY) -m deliverylab jupyter stop
	-$(PY) -m deliverylab stack down

## bench: print the course's timing and memory figures
bench: setup
	$(PY) -m deliverylab stack up
	$(PY) -m deliverylab.bench
	$(PY) -m deliverylab.cluster_bench

## doctor: check Java, memory, ports, the jars, both kernels (the main one and module 10's) and the broker
doctor: setup
	$(PY) -m deliverylab doctor

## site: every lesson, executed, as HTML with its charts in .state/site/ (lessons with no fresh executed copy run first)
site: setup
	$(PY) -m deliverylab site

## clean: remove the venvs (the main one and module 10's) and all local state (jars, broker data, lesson tables)
clean: stop
	rm -rf $(VENV) $(ICEBERG_VENV) .state
