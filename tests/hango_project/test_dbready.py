"""hango_project.dbready: a database not created yet is one clear error of ``migrate``, and a
worker waits for the migrations, saying what it waits for."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

from hango_project import dbready
from tests.support import workers

# Waiting closes its connection between polls, as a worker's should: no test transaction.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_migrate_on_a_database_not_created_says_how_to_create_it():
    missing = f"{connection.settings_dict['NAME']}_never_created"
    server = workers.test_database_url().rsplit("/", 1)[0]
    done = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"],
                          cwd=workers.ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "DATABASE_URL": f"{server}/{missing}"})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert f'database "{missing}" does not exist' in done.stderr
    db = connection.settings_dict
    options = [f"{flag} {db[key]}" for flag, key in (("-h", "HOST"), ("-p", "PORT"),
                                                      ("-U", "USER")) if db.get(key)]
    createdb = " ".join(["createdb", *options, missing])
    assert f"HINT: Create it first: {createdb}" in done.stderr


@pytest.fixture
def unapplied() -> Iterator[tuple[str, str]]:
    """A migration nothing depends on, recorded as not applied for the test (and applied
    again after it): only it is left to apply."""
    leaves = MigrationLoader(connection).graph.leaf_nodes()
    app, name = next((app, name) for app, name in leaves if app == "runs")
    MigrationRecorder.Migration.objects.filter(app=app, name=name).delete()
    yield app, name
    MigrationRecorder.Migration.objects.get_or_create(app=app, name=name)


def test_a_migrated_database_is_ready():
    assert dbready.unreachable() is None
    assert dbready.unapplied() == []
    assert dbready.not_ready() is None


def test_a_migration_not_applied_is_named(unapplied):
    app, name = unapplied
    gap = dbready.not_ready()
    assert gap is not None and gap.kind == "migrations"
    assert gap.reason == (f"migrations not applied yet: 1, the next {app}.{name} "
                          "(`manage.py migrate` applies them)")


def test_waiting_says_once_what_it_waits_for_then_that_the_database_is_ready(caplog,
                                                                             unapplied):
    app, name = unapplied
    polls: list[float] = []

    def migrate_meanwhile(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 3:  # migrate is done
            MigrationRecorder.Migration.objects.create(app=app, name=name)

    with caplog.at_level(logging.INFO, logger="hango.dbready"):
        dbready.wait_until_ready(poll=0.5, sleep=migrate_meanwhile)
    assert polls == [0.5, 0.5, 0.5]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"waiting for the database: migrations not applied yet: 1, the next "
                    f"{app}.{name} (`manage.py migrate` applies them)"),
        ("INFO", "the database is ready: every migration is applied")]


def test_a_long_wait_is_said_again_now_and_then(caplog, unapplied):
    """A wait that never ends by itself (a database never created, a wrong password) must not
    look like an idle worker: the same reason is logged again every ``remind`` seconds."""
    app, name = unapplied
    polls: list[float] = []

    def migrate_late(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 7:
            MigrationRecorder.Migration.objects.create(app=app, name=name)

    with caplog.at_level(logging.WARNING, logger="hango.dbready"):
        dbready.wait_until_ready(poll=10, remind=30, sleep=migrate_late)
    said = [r.getMessage().split(":")[0] for r in caplog.records]
    assert said == ["waiting for the database", "waiting for the database (still, after 30 s)",
                    "waiting for the database (still, after 60 s)"]


def test_a_ready_database_is_not_waited_for(caplog):
    with caplog.at_level(logging.INFO, logger="hango.dbready"):
        dbready.wait_until_ready(sleep=lambda s: pytest.fail("waited"))
    assert caplog.records == []
