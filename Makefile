# hango: two commands on a fresh machine.
#   make quickstart   install, then serve hango on embedded defaults at 127.0.0.1:$(PORT)
#   make test         the whole test suite (PostgreSQL and Redis on 127.0.0.1), then the runs'
#                     tests and the quickstart's scenarios again on SQLite (make test-sqlite)
# And while changing code, the fast tier:
#   make check        the linters and every test that starts no process and uses no database
#   make docs         the docs site (MkDocs) into var/site, built strict

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PORT   ?= 8000
# The suite runs on PostgreSQL; pytest-django creates and drops its own test_<name> database.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/hango
TEST_BROKER_URL   ?= redis://127.0.0.1:6379/15
# The PostgreSQL pass runs in this many test processes (pytest-xdist; 0: in this one). Much of
# its time is spent waiting on the processes it starts (workers, servers, a browser), on
# PostgreSQL and on polls: on two cores, two processes took 41% off the API scenarios and 20%
# off the worker-heavy ones (tests/README.md, *Two test processes*). Each has a database of
# its own (test_<name>_gw0, _gw1) and a Redis database of its own, counted down from
# TEST_BROKER_URL's (15, then 14: tests/support/broker.py). A module's tests stay in one
# process (--dist loadfile): a module starts its server or browser once.
TEST_PROCESSES    ?= 2
# The second pass runs on SQLite, the quickstart's engine: the other side of the database seam
# (hango_project/database.py). The runs' store has one implementation per engine, and one
# contract module asserts the same things of both (tests/runs/test_store_contract.py, in
# tests/runs); with the runs' tests, this pass runs the scenario a quickstart user walks (an
# agent, a session, a message, an approval) in one process. test_quickstart.py runs `make
# quickstart` on SQLite in the first pass already. pytest-django makes its test database a file
# beside this one; tests marked postgresql(reason=...) are skipped, saying why.
TEST_SQLITE_DIR   ?= var/test-sqlite
SQLITE_TESTS      := tests/runs tests/hango_project/test_database.py \
	tests/scenarios/test_api_smoke.py tests/scenarios/test_approvals.py
SQLITE_PASS = mkdir -p $(TEST_SQLITE_DIR) \
	&& DATABASE_URL=sqlite:///$(abspath $(TEST_SQLITE_DIR))/hango.sqlite3 \
	   HANGO_TEST_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest \
	   --durations-file=$(DURATIONS)/sqlite.json $(SQLITE_TESTS)
# Each pass of `make test` writes every test's setup, call and teardown seconds here, slowest
# first, with each file's total (tests/support/tiers.py): where the suite's time goes.
DURATIONS         := var/durations
# The fast tier (CONTRIBUTING.md, "Two tiers"): no test marked `slow` (it would start a process;
# tests/support/tiers.py fails one that starts a process unmarked) nor `database` (set at
# collection from the test's fixtures). It needs no PostgreSQL: the database is SQLite in memory,
# which no test selected opens; a few tests of the live streams use the suite's Redis.
CHECK_PASS = DATABASE_URL=sqlite:///:memory: HANGO_TEST_BROKER_URL=$(TEST_BROKER_URL) \
	$(PY) -m pytest -m "not slow and not database" --durations-file=$(DURATIONS)/check.json

# The docs site, built strict (below, `make docs`). NO_MKDOCS_2_WARNING silences the Material
# theme's banner about its successor, printed on every build.
DOCS_BUILD = NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The embedded defaults: whatever the shell exports, the quickstart uses none of it. The demo
# model streams its words 50 ms apart, so a follower of a run sees the answer being written.
EMBEDDED := env -u DATABASE_URL -u CELERY_BROKER_URL -u HANGO_BROKER_URL DJANGO_DEBUG=1 \
	HANGO_SCRIPTED_WORD_DELAY_MS=50

.PHONY: install quickstart serve worker browser test test-sqlite check lint docs clean

PIP    := $(PY) -m pip --quiet --disable-pip-version-check
# pip's own output (its warnings, a root-user notice) goes here, and to the screen only on failure.
INSTALL_LOG := $(VENV)/install.log

# requirements-nodeps.txt holds packages that declare a newer Python than 3.11 but run on it (ctok):
# pip would refuse them in the resolver, so they go in a step of their own. The Python SDK
# (sdk/python, package hango_client) is its own package, installed editable in a step of its own:
# the CLI is built on it.
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml sdk/python/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "Installing the pinned requirements into $(VENV) (pip's output: $(INSTALL_LOG))..."
	@{ $(PIP) install --upgrade pip \
	   && $(PIP) install -r requirements.txt \
	   && $(PIP) install --no-deps --ignore-requires-python -r requirements-nodeps.txt \
	   && $(PIP) install --no-deps -e sdk/python \
	   && $(PIP) install --no-deps -e . ; } > $(INSTALL_LOG) 2>&1 \
	 || { tail -n 25 $(INSTALL_LOG); echo "Installing failed: pip's whole output is in $(INSTALL_LOG)." >&2; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

quickstart: install
	@echo "Migrating the embedded database..."
	@$(EMBEDDED) $(PY) manage.py migrate --noinput --verbosity 0
	@$(EMBEDDED) $(PY) manage.py hango_reconcile --verbosity 0
	@$(EMBEDDED) $(PY) manage.py hango_quickstart --url http://127.0.0.1:$(PORT)
	@echo "Serving on http://127.0.0.1:$(PORT) (Ctrl-C stops)."
	@$(EMBEDDED) $(PY) manage.py runserver 127.0.0.1:$(PORT) --noreload

# The full stack without Docker: PostgreSQL + Redis from the environment. Each gunicorn worker
# serves its requests as greenlets (gevent), so a run's event stream, open for minutes, holds
# neither a worker nor a database connection while it waits.
serve: install
	$(PY) manage.py migrate --noinput
	$(PY) -m gunicorn hango_project.wsgi --bind 127.0.0.1:$(PORT) --workers 2 \
	  --worker-class gevent --worker-connections 2000

# A Celery worker per core (HANGO_WORKER_PROCESSES), supervised as one group
# (hango_project/worker_group.py). Each process runs up to HANGO_WORKER_CONCURRENCY runs at once,
# each a greenlet (the gevent pool) that holds no database connection while its model call is
# out (docs/operations/scaling.md, "Runs in flight"). Every worker also runs the reconciler
# (re-enqueues runs whose worker died) every HANGO_RECONCILE_SECONDS: no beat to start
# (runs/execution/reconciler.py says why).
worker: install
	$(PY) -m hango_project.worker_group --loglevel INFO

# The admin's browser tests drive Debian's Chromium through Playwright (tests/support/browser.py),
# which never downloads a browser of its own: install the package when it is missing.
browser:
	@if [ -n "$(HANGO_TEST_CHROMIUM)" ]; then \
	  test -x "$(HANGO_TEST_CHROMIUM)" \
	    || { echo "HANGO_TEST_CHROMIUM=$(HANGO_TEST_CHROMIUM) is not a program" >&2; exit 1; }; \
	elif [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian's chromium package"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
	    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	    || { echo "could not install Debian's chromium package, which the browser tests need" >&2; \
	         exit 1; }; \
	fi

test: install browser
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache
	$(DOCS_BUILD)
	DATABASE_URL=$(TEST_DATABASE_URL) HANGO_TEST_BROKER_URL=$(TEST_BROKER_URL) $(PY) -m pytest \
	  -n $(TEST_PROCESSES) --dist loadfile --durations-file=$(DURATIONS)/postgresql.json
	$(SQLITE_PASS)

# The SQLite pass of `make test` alone.
test-sqlite: install
	$(SQLITE_PASS)

# The fast tier: the linters, the docs site (a few seconds), then every test that starts no
# process and uses no database.
check: lint
	$(DOCS_BUILD)
	$(CHECK_PASS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports --no-cache

# The docs site (mkdocs.yml): pages under docs/, and the configuration and API references that
# tools/docs_hooks.py writes at build time. Strict: a broken link or anchor, or a page missing
# from the nav, fails the build. Serve it while writing with `.venv/bin/mkdocs serve`.
docs: install
	$(DOCS_BUILD)
	@echo "The site is in var/site (open var/site/index.html)."

clean:
	rm -rf $(VENV) var .pytest_cache
