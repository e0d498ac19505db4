"""The key lookup every API request makes, as one plain query on PostgreSQL: the key by its
prefix with its member, the member's tenant and user (what authentication, the rate limit and
scoping read).

Through the ORM the same join was compiled anew on every request: more than half of the
lookup's CPU, and the largest part of a post's authentication (bench/README.md, "A post over
HTTP"). The query is built once per process from the models' fields, so a new column is read
without a change here; each value goes through the converters the ORM applies (a sealed field's
``from_db_value`` among them). SQLite keeps the ORM's query.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, models

from accounts.models import ApiKey, Member, Tenant
from hango_project.database import database

# (model, alias, the join condition), in the order the instances are built and linked.
_JOINS: tuple[tuple[str, str, str | None], ...] = (
    ("key", "k", None), ("member", "m", 'm."id" = k."member_id"'),
    ("tenant", "t", 't."id" = m."tenant_id"'), ("user", "u", 'u."id" = m."user_id"'))


def _models() -> dict[str, type[models.Model]]:
    return {"key": ApiKey, "member": Member, "tenant": Tenant, "user": get_user_model()}


@functools.cache
def _query() -> str:
    quote, found = connection.ops.quote_name, _models()
    columns = ", ".join(f"{alias}.{quote(str(f.column))}" for name, alias, _ in _JOINS
                        for f in found[name]._meta.concrete_fields)
    tables = " ".join(
        f"{quote(found[name]._meta.db_table)} {alias}" if on is None
        else f"JOIN {quote(found[name]._meta.db_table)} {alias} ON {on}"
        for name, alias, on in _JOINS)
    return f'SELECT {columns} FROM {tables} WHERE k."prefix" = %s LIMIT 1'


def _instance(model: type[models.Model], values: tuple[Any, ...]) -> models.Model:
    """``model`` from its concrete fields' raw values, converted as the ORM converts them."""
    fields = model._meta.concrete_fields
    converted = []
    for field, value in zip(fields, values, strict=True):
        column = field.get_col(model._meta.db_table)
        for convert in (*connection.ops.get_db_converters(column),
                        *column.get_db_converters(connection)):
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


def key_by_prefix(prefix: str) -> ApiKey | None:
    """The key whose prefix is ``prefix``, its member, tenant and user loaded, or None."""
    if not database().one_statement:
        return (ApiKey.objects.select_related("member__tenant", "member__user")
                .filter(prefix=prefix).first())
    with connection.cursor() as cursor:
        cursor.execute(_query(), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    built, at, found = {}, 0, _models()
    for name, _, _ in _JOINS:
        width = len(found[name]._meta.concrete_fields)
        built[name], at = _instance(found[name], row[at:at + width]), at + width
    member = built["member"]
    member.tenant, member.user = built["tenant"], built["user"]  # type: ignore[attr-defined]
    key = built["key"]
    key.member = member  # type: ignore[attr-defined]
    assert isinstance(key, ApiKey)
    return key
