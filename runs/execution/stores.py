"""The harness's file and summary stores over the runs tables, bound to one session, and the
journal of a run's MCP calls.

A run's stores write under its claim's guard (:meth:`runs.execution.fence.Claim.hold`): a worker
whose run was taken over writes nothing (:class:`harness.errors.Superseded`)."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import Func, IntegerField

from agents.stores import Guard, guarded
from hango_project.database import database, database_of
from hango_project.sql import fetch, uuid_param
from harness.stores import FileInfo, Summary
from runs.execution.fence import Claim
from runs.execution.store import store
from runs.models import Session, SessionFile, ToolCallStart


class OctetLength(Func):
    """A text column's size in UTF-8 bytes. PostgreSQL reads it from the value's header without
    decompressing it (``char_length`` would decompress every file just to list them — and the
    filesystem's system part lists them on every model call). Its SQL per engine comes from
    :meth:`hango_project.database.Database.octet_length`."""

    output_field = IntegerField()

    def as_sql(self, compiler: Any, connection: Any, function: str | None = None,
               template: str | None = None, arg_joiner: str | None = None,
               **extra_context: Any) -> Any:
        template = template or database_of(connection).octet_length("%(expressions)s")
        return super().as_sql(compiler, connection, function, template, arg_joiner,
                              **extra_context)


class DbFileStore:
    """The session's virtual filesystem (``session_files``); sizes are in UTF-8 bytes.

    The listing is read once and kept until this store writes: the filesystem's system part
    lists the files on every model call, and within a run every write goes through this object
    (a subagent shares its parent's store). ``listing``: the (path, size) rows of a run's
    preload (:mod:`runs.execution.preload`), the listing until the first write."""

    def __init__(self, session_id: uuid.UUID, *, guard: Guard | None = None,
                 listing: list[tuple[str, int]] | None = None) -> None:
        self.session_id = session_id
        self.guard = guard
        self._listing: list[FileInfo] | None = (
            None if listing is None else [FileInfo(path=p, size=s) for p, s in listing])

    def list(self) -> list[FileInfo]:
        if self._listing is None:
            size = database().octet_length("content")  # see OctetLength
            rows = fetch(f"SELECT path, {size} FROM {SessionFile._meta.db_table} "
                         "WHERE session_id = %s ORDER BY path", [uuid_param(self.session_id)])
            self._listing = [FileInfo(path=path, size=size) for path, size in rows]
        return list(self._listing)

    def read(self, path: str) -> str | None:
        row = SessionFile.objects.filter(session_id=self.session_id, path=path)
        return row.values_list("content", flat=True).first()

    def write(self, path: str, content: str) -> None:
        self._listing = None
        with guarded(self.guard):
            SessionFile.objects.update_or_create(
                session_id=self.session_id, path=path, defaults={"content": content})


class DbSummaryStore:
    def __init__(self, session_id: uuid.UUID, *, guard: Guard | None = None) -> None:
        self.session_id = session_id
        self.guard = guard

    def load(self) -> Summary | None:
        row = (Session.objects.filter(pk=self.session_id)
               .values_list("summary", "summary_seq").first())
        if row is None or not row[1]:
            return None
        return Summary(text=row[0], through_seq=row[1])

    def save(self, summary: Summary) -> None:
        # Only ever move forward: a slower run cannot overwrite a newer summary.
        with guarded(self.guard):
            Session.objects.filter(pk=self.session_id, summary_seq__lte=summary.through_seq).update(
                summary=summary.text, summary_seq=summary.through_seq)


class DbCallJournal:
    """The run's journal of the MCP calls it sent (``tool_call_starts``): each written under
    the claim's guard before the call is sent, so a claim that was taken over sends nothing."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim

    def sent_before(self) -> frozenset[str]:
        return frozenset(ToolCallStart.objects.filter(run_id=self.claim.run_id,
                                                      epoch__lt=self.claim.epoch)
                         .values_list("key", flat=True))

    def record(self, key: str, *, tool_use_id: str, tool: str) -> None:
        store().journal_call(self.claim, key, tool_use_id=tool_use_id, tool=tool)
