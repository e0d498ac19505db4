"""The key lookup of every request (accounts/key_lookup.py): on PostgreSQL a plain query built
from the models' fields, which must load exactly what the ORM's join loads — every column of
the key, its member, tenant and user, converted alike (the sealed trigger key decrypts) — and
nothing more on the way (no query for the related objects)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.key_lookup import key_by_prefix
from accounts.models import ApiKey


def columns(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_lookup_loads_what_the_orm_loads(alice):
    prefix = alice.key.split("_")[1]
    orm = ApiKey.objects.select_related("member__tenant", "member__user").get(prefix=prefix)
    with CaptureQueriesContext(connection) as queries:
        key = key_by_prefix(prefix)
        assert key is not None
        pairs = [(key, orm), (key.member, orm.member), (key.member.tenant, orm.member.tenant),
                 (key.member.user, orm.member.user)]
    assert len(queries) == 1
    for ours, theirs in pairs:
        assert type(ours) is type(theirs)
        assert columns(ours) == columns(theirs)
        assert not ours._state.adding and ours._state.db == "default"
    assert key.trigger_key == orm.trigger_key != ""


def test_an_unknown_prefix_is_none(alice):
    assert key_by_prefix("0" * 12) is None
