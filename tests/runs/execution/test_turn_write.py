"""runs.execution.turn_write: which content reads back from PostgreSQL exactly as it was written (a
stored count relies on it)."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from runs.execution.turn_write import reads_back_as_written

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("arguments", [
    {"a": 1, "bb": 2}, {"bb": 2, "a": 1}, {"path": "/x", "text": "y"}, {"text": "y", "path": "/x"},
    {"é": 1, "z": 2}, {"z": 2, "é": 1}, {"n": 100}, {"a": [{"b": 1, "aa": 2}]},
    {"a": [{"aa": 2, "b": 1}]}, {}, {"s": "ünïcode", "t": None, "u": True},
])
@pytest.mark.postgresql(reason="what jsonb keeps of a call's arguments")
def test_a_call_reads_back_as_written_exactly_when_jsonb_keeps_it(arguments):
    """What the stored counts rely on: a count is stored only for content PostgreSQL gives back
    as it was written (its keys' order), here checked against PostgreSQL itself."""
    content = [{"type": "tool_use", "id": "c", "name": "n", "input": arguments}]
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(arguments)])
        back = json.loads(cursor.fetchone()[0])
    assert reads_back_as_written(content) is (
        json.dumps(back, ensure_ascii=False) == json.dumps(arguments, ensure_ascii=False))


def test_a_float_is_never_taken_to_read_back_as_written():
    assert not reads_back_as_written(
        [{"type": "tool_use", "id": "c", "name": "n", "input": {"n": 1.5}}])
    assert reads_back_as_written([{"type": "text", "text": "no call"}])
