# Two commands on a fresh machine:  `make run` (the product)  and  `make test` (the suite).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test venv bench bench-peers clean system-deps

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
