"""The harness's file and summary stores over the runs tables, bound to one session."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models.functions import Length

from harness.stores import FileInfo, Summary
from runs.models import Session, SessionFile


class DbFileStore:
    def __init__(self, session_id: uuid.UUID) -> None:
        self.session_id = session_id

    def list(self) -> list[FileInfo]:
        rows = (SessionFile.objects.filter(session_id=self.session_id).order_by("path")
                .annotate(size=Length("content")).values_list("path", "size"))
        return [FileInfo(path=path, size=size) for path, size in rows]

    def read(self, path: str) -> str | None:
        row = SessionFile.objects.filter(session_id=self.session_id, path=path)
        return row.values_list("content", flat=True).first()

    def write(self, path: str, content: str) -> None:
        with transaction.atomic():
            SessionFile.objects.update_or_create(
                session_id=self.session_id, path=path, defaults={"content": content})


class DbSummaryStore:
    def __init__(self, session_id: uuid.UUID) -> None:
        self.session_id = session_id

    def load(self) -> Summary | None:
        row = (Session.objects.filter(pk=self.session_id)
               .values_list("summary", "summary_seq").first())
        if row is None or not row[1]:
            return None
        return Summary(text=row[0], through_seq=row[1])

    def save(self, summary: Summary) -> None:
        # Only ever move forward: a slower run cannot overwrite a newer summary.
        Session.objects.filter(pk=self.session_id, summary_seq__lte=summary.through_seq).update(
            summary=summary.text, summary_seq=summary.through_seq)
