# FlowForge developer entry points.
#   make test   system tools + services + venv, then the SQL suite (pgTAP,
#               plpgsql_check) and the Python suite (pytest; its pooler tests
#               start their own pgbouncer, and the UI's browser tests drive
#               headless Chromium, so those packages are system deps)
#   make demo   the no-database-server path: embedded PostgreSQL via pgserver
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

VENV      := .venv
PY        := $(VENV)/bin/python
FLOWFORGE := $(VENV)/bin/flowforge
STAMP     := $(VENV)/.installed-flowforge
# Three test processes, a whole file each (module fixtures stay in one process):
# most tests wait on leases, timers and subprocesses, so three overlap on two
# cores; every test has its own database, port and names. PYTEST_ARGS=-q runs serially.
PYTEST_ARGS ?= -q -n 3 --dist loadfile

# The local PostgreSQL major version (Debian layout); 15 when none is installed yet.
PGVER     := $(or $(lastword $(sort $(notdir $(wildcard /etc/postgresql/*)))),15)
PGEXT     := /usr/share/postgresql/$(PGVER)/extension
APT_PKGS  := postgresql-$(PGVER) postgresql-$(PGVER)-pgtap libtap-parser-sourcehandler-pgtap-perl \
             postgresql-$(PGVER)-plpgsql-check python3-venv chromium chromium-driver

.PHONY: test test-sql test-py demo system-deps services postgres rabbitmq install clean

test: system-deps services install
	@rc=0; \
	echo "== SQL suite (pgTAP + plpgsql_check) =="; tests/run_pgtap.sh || rc=1; \
	echo "== Python suite (pytest) =="; $(VENV)/bin/pytest $(PYTEST_ARGS) tests/py || rc=1; \
	exit $$rc

test-sql: system-deps postgres install
	tests/run_pgtap.sh

test-py: system-deps services install
	$(VENV)/bin/pytest $(PYTEST_ARGS) tests/py

# No FLOWFORGE_DSN: the CLI starts its embedded PostgreSQL in ./.flowforge/pgdata;
# `flowforge serve` then shows the demo's runs in the browser (the demo says how).
demo: install
	@if $(FLOWFORGE) demo --help >/dev/null 2>&1; then \
	    env -u FLOWFORGE_DSN $(FLOWFORGE) demo; \
	else \
	    env -u FLOWFORGE_DSN $(FLOWFORGE) migrate && env -u FLOWFORGE_DSN $(FLOWFORGE) doctor; \
	fi

# --- the Python environment --------------------------------------------------

$(PY):
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $@

install: $(STAMP)

# --- tools from the OS: installed when root, otherwise named --------------------

system-deps:
	@missing=""; \
	command -v pg_ctlcluster >/dev/null || missing="$$missing postgresql-$(PGVER)"; \
	command -v pg_prove >/dev/null || missing="$$missing libtap-parser-sourcehandler-pgtap-perl"; \
	test -f $(PGEXT)/pgtap.control || missing="$$missing postgresql-$(PGVER)-pgtap"; \
	test -f $(PGEXT)/plpgsql_check.control || missing="$$missing postgresql-$(PGVER)-plpgsql-check"; \
	python3 -c 'import ensurepip' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v rabbitmq-server >/dev/null || missing="$$missing rabbitmq-server"; \
	command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || missing="$$missing pgbouncer"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	command -v git >/dev/null || missing="$$missing git"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v curl >/dev/null || missing="$$missing curl"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
	    echo "missing system packages:$$missing"; \
	    echo "install them (e.g. sudo apt-get install -y$$missing) and re-run make"; \
	    exit 1; \
	fi; \
	echo "installing:$$missing"; \
	apt-get update -qq; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null

# --- services the tests talk to ------------------------------------------------------

services: postgres rabbitmq

postgres:
	@if ! pg_isready -q -h 127.0.0.1 -p 5432; then \
	    echo "starting PostgreSQL $(PGVER)"; \
	    pg_ctlcluster --skip-systemctl-redirect $(PGVER) main start; \
	    for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; \
	fi
	@psql -X -q -h 127.0.0.1 -U postgres -d postgres -c 'SELECT 1' >/dev/null || { \
	    echo "cannot log in as postgres on 127.0.0.1:5432 without a password;"; \
	    echo "the test suite expects trust auth there (see Dockerfile for the pg_hba.conf line)"; \
	    exit 1; }

rabbitmq:
	@if ! timeout 1 bash -c '</dev/tcp/127.0.0.1/5672' 2>/dev/null; then \
	    echo "starting RabbitMQ"; \
	    rabbitmq-server -detached; \
	    for i in $$(seq 1 60); do timeout 1 bash -c '</dev/tcp/127.0.0.1/5672' 2>/dev/null && break; sleep 1; done; \
	    timeout 1 bash -c '</dev/tcp/127.0.0.1/5672' 2>/dev/null || { echo "RabbitMQ did not open port 5672"; exit 1; }; \
	fi

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist

# --- benchmarks ----------------------------------------------------------------
# make bench   the benchmarks of benchmarks/ (run_all.py's list, under 15 minutes), appended to
#              benchmarks/RESULTS.md with charts; BENCH_ARGS=--quick for a smoke run
.PHONY: bench
bench: services install
	$(PY) benchmarks/run_all.py $(BENCH_ARGS)

# make soak    tests/py/test_soak.py for SOAK_SECONDS of chaos (default 300): daemons and
#              workers of several organizations SIGKILLed, SIGSTOPped and restarted while runs
#              of every engine kind flow; its figures go to soak-report.json
SOAK_SECONDS ?= 300
.PHONY: soak
soak: services install
	FF_SOAK_SECONDS=$(SOAK_SECONDS) FF_SOAK_REPORT=$(CURDIR)/soak-report.json \
	    $(VENV)/bin/pytest -q -s -m soak tests/py/test_soak.py
