"""hango_project.database: the engine the suite runs on answers for it, and what each engine
does its own way gives the same answers on both (the suite runs on each: ``make test``)."""

from __future__ import annotations

import pytest
from django.db import connection

from hango_project.database import PostgreSQL, SQLite, database, database_of

pytestmark = pytest.mark.django_db


def test_the_seam_is_the_engine_of_the_connection():
    assert database() is database_of(connection)
    assert database().vendor == connection.vendor
    assert isinstance(database(), PostgreSQL if connection.vendor == "postgresql" else SQLite)


def test_a_text_s_size_is_its_utf8_bytes_on_either_engine():
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {database().octet_length('%s')}", ["héllo ✓"])
        assert cursor.fetchone()[0] == len("héllo ✓".encode())


def test_a_lock_taken_in_a_transaction_is_held_until_it_ends():
    from django.db import transaction

    with transaction.atomic():
        database().lock((1, 2))
        assert database().try_lock((1, 2))  # the holder itself may take it again


def test_an_engine_hango_does_not_run_on_is_named():
    class Oracle:
        vendor = "oracle"

    with pytest.raises(NotImplementedError, match="not on oracle"):
        database_of(Oracle())
