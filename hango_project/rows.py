"""A model's row read or inserted by a plain statement, built once per process from the model's
fields: for the few reads and writes every message post makes, where the ORM compiled the same
query anew each time (bench/README.md, "A post over HTTP"). A new column is read and written
without a change here.

An instance read here is what the ORM's query would have built: every concrete field, through
the same converters (a JSON column decoded, a SQLite uuid parsed). A row inserted here is what
``Model.save`` would have written for a new object: ``pre_save`` (``auto_now_add``) then
``get_db_prep_save``, no signals (none of the models written here has a receiver).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.db import connection, models

M = TypeVar("M", bound=models.Model)


def insert_fields(model: type[models.Model]) -> list[models.Field]:
    """The columns an insert writes: every concrete field but a database-generated key."""
    return [f for f in model._meta.concrete_fields
            if not isinstance(f, models.AutoField | models.BigAutoField)]


def insert_sql(model: type[models.Model], values: str, returning: str | None = None) -> str:
    """``INSERT INTO`` the model's table, its :func:`insert_fields` in order, then ``values``
    (``VALUES (...)`` or a ``SELECT``)."""
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in insert_fields(model))
    table = connection.ops.quote_name(model._meta.db_table)
    tail = f" RETURNING {returning}" if returning else ""
    return f"INSERT INTO {table} ({columns}) {values}{tail}"


def insert_values(obj: models.Model, replace: dict[str, Any] | None = None) -> list[Any]:
    """``obj``'s insert values in :func:`insert_fields`' order, as ``Model.save`` prepares
    them; ``replace`` gives a column's parameter instead (a subquery's)."""
    out = []
    for f in insert_fields(type(obj)):
        if replace and f.column in replace:
            out.append(replace[f.column])
        else:
            out.append(f.get_db_prep_save(f.pre_save(obj, True), connection))
    return out


@functools.cache
def _plain_insert(model: type[models.Model]) -> str:
    return insert_sql(model, f"VALUES ({', '.join(['%s'] * len(insert_fields(model)))})")


def insert(obj: M) -> M:
    """``obj`` inserted as ``obj.save()`` inserts a new object (its key set by the caller or its
    field's default), in one plain statement."""
    params = insert_values(obj)
    with connection.cursor() as cursor:
        cursor.execute(_plain_insert(type(obj)), params)
    obj._state.adding, obj._state.db = False, connection.alias
    return obj


Converter = Callable[[Any, Any, Any], Any]


@functools.cache
def _reader(model: type[models.Model]) -> tuple[str, list[str], list[tuple[Any, list[Converter]]]]:
    """The model's SELECT list, its fields' attnames, and each column with its converters (the
    ORM's compiler gathers the same ones)."""
    table = model._meta.db_table
    fields = list(model._meta.concrete_fields)
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    converters = []
    for f in fields:
        col = f.get_col(table)
        converters.append((col, [*connection.ops.get_db_converters(col),
                                 *col.get_db_converters(connection)]))
    select = f"SELECT {columns} FROM {connection.ops.quote_name(table)}"
    return select, [f.attname for f in fields], converters


def select_one(model: type[M], where: str, params: Sequence[Any]) -> M | None:
    """The first row of ``model`` matching ``where`` (SQL over its columns, ``%s`` for each of
    ``params``) as an instance, or None."""
    select, names, converters = _reader(model)
    with connection.cursor() as cursor:
        cursor.execute(f"{select} WHERE {where} LIMIT 1", params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = []
    for value, (col, funcs) in zip(row, converters, strict=True):
        for func in funcs:
            value = func(value, col, connection)
        values.append(value)
    return model.from_db(connection.alias, names, values)
