# Two commands on a fresh machine:  `make run` (the product)  and  `make test` (the suite).
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

.PHONY: run test test-django6 venv bench clean system-deps

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,tasks-backport]'
	touch $@

$(VENV_DJANGO6)/.installed: pyproject.toml
	@test -n "$(PYTHON_DJANGO6)" || { echo "make test-django6 needs python3.13 or 3.12"; exit 1; }
	$(PYTHON_DJANGO6) -m venv $(VENV_DJANGO6)
	$(VENV_DJANGO6)/bin/python -m pip install --quiet --upgrade pip
	$(VENV_DJANGO6)/bin/python -m pip install --quiet -e '.[test]' '$(DJANGO6)'
	touch $@

venv: $(VENV)/.installed

run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py embedded_redis start
	$(PY) manage.py serve --bind $(HOST):$(PORT)

# Chromium (browser tests) and python3-venv: installed with apt-get as root or with sudo,
# else `make test` stops here with one line saying what to install.
system-deps:
	@sh .ci/system-deps "$(PYTHON)"

test: system-deps
	@$(MAKE) --no-print-directory venv
	$(PY) -m pytest $(PYTEST_ARGS)

test-django6: system-deps
	@$(MAKE) --no-print-directory $(VENV_DJANGO6)/.installed
	$(VENV_DJANGO6)/bin/python -m pytest $(DJANGO6_WARNINGS) $(PYTEST_ARGS)

# Without BENCH_REDIS_URL each bench starts (and stops) a throwaway redis-server.
bench: venv
	$(PY) bench/dispatch.py
	$(PY) bench/throughput.py

clean:
	-$(PY) manage.py embedded_redis stop
	rm -rf $(VENV) $(VENV_DJANGO6) var
