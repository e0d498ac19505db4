"""The request diff: the session's next model call against one the session sent before, part by
part, and the first part that breaks the earlier call's cached prefix.

The earlier call is named by ``against``: ``last`` (the session's last call of a run) or
``<run id>:<turn>`` (the call run ``<run id>`` made in its turn ``<turn>``, as the run's events
and the admin's run page number them). What is compared is two prints of one function
(:func:`harness.fingerprint.of_request`): the one the run stored when it sent the call, and the
one of the request the inspector shows — so a part reported the same is sent byte for byte as
it was.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from accounts.models import UsagePurpose, UsageRecord
from hango_project.errors import BadQuery, Conflict, NotFound
from harness import fingerprint, print_diff
from harness.inspect import Snapshot
from harness.tokens.tokenizers import tokenizer_for
from runs.intake.selectors import SentCall, run_calls
from runs.models import Run, Session

LAST = "last"
# `last`, or a run id (hyphenated, any case) and a turn from 1.
AGAINST_PATTERN = (r"^(?:last|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}:0*[1-9][0-9]*)$")


@dataclass(frozen=True, kw_only=True)
class Earlier:
    """The call a diff compares with, and where it was sent."""

    run_id: uuid.UUID
    call: SentCall

    @property
    def ref(self) -> str:
        return f"{self.run_id}:{self.call.turn}"


def parse_against(value: str) -> tuple[uuid.UUID, int] | None:
    """``against`` read: None for ``last``, else (run id, turn); 400 for anything else."""
    if value == LAST:
        return None
    if not re.match(AGAINST_PATTERN, value):
        raise BadQuery("against is 'last' or '<run id>:<turn>' (a run of the session and one "
                       "of its turns, from 1).", detail={"against": value})
    run, _, turn = value.rpartition(":")
    return uuid.UUID(run), int(turn)


def earlier_call(*, session: Session, against: str) -> Earlier:
    """The earlier call ``against`` names, with its print: 400 for a malformed ``against``,
    404 for a run that is not the session's, 409 for a turn that sent no call or whose call
    has no print (sent before hango kept them)."""
    wanted = parse_against(against)
    if wanted is None:
        return _last_call(session, against)
    run_id, turn = wanted
    run = Run.objects.filter(pk=run_id, session=session).values_list("created_at").first()
    if run is None:
        raise NotFound("The session has no such run.", detail={"against": against})
    calls = [c for c in run_calls(run_id, tenant_id=session.tenant_id, since=run[0])
             if c.turn == turn]
    if not calls:
        raise Conflict(f"Run {run_id} made no model call in turn {turn}: there is nothing to "
                       "compare with.", detail={"against": against, "reason": "no_call"})
    return _printed(Earlier(run_id=run_id, call=calls[-1]), against)


def _last_call(session: Session, against: str) -> Earlier:
    run_id = (UsageRecord.objects.filter(
        tenant_id=session.tenant_id, created_at__gte=session.created_at, session_id=session.pk,
        purpose=UsagePurpose.RUN).order_by("-created_at", "-id")
        .values_list("run_id", flat=True).first())
    since = None if run_id is None else (
        Run.objects.filter(pk=run_id).values_list("created_at", flat=True).first())
    calls = [] if run_id is None or since is None else run_calls(
        run_id, tenant_id=session.tenant_id, since=since)
    if run_id is None or not calls:
        raise Conflict("The session has sent no model call yet: there is nothing to compare "
                       "with.", detail={"against": against, "reason": "no_call"})
    return _printed(Earlier(run_id=run_id, call=calls[-1]), against)


def _printed(earlier: Earlier, against: str) -> Earlier:
    if earlier.call.sent is None:
        raise Conflict(f"The call of run {earlier.run_id} in turn {earlier.call.turn} was sent "
                       "before hango kept a print of each request it sends: there is nothing "
                       "to compare with. Compare with a later call.",
                       detail={"against": against, "reason": "no_print"})
    return earlier


def diff_json(snapshot: Snapshot, earlier: Earlier, model: str) -> dict[str, Any]:
    """The diff of the snapshot's request against ``earlier``, as the API answers it."""
    assert earlier.call.sent is not None
    now = fingerprint.of_request(snapshot.request, tokenizer_for(model))
    found = print_diff.diff(earlier.call.sent, now)
    cut = found.cache_break
    return {
        "against": {"ref": earlier.ref, "run": str(earlier.run_id), "turn": earlier.call.turn,
                    "call": earlier.call.cache_json()},
        "parts": [{"id": p.part, "status": p.status, "tokens": p.tokens,
                   "tokens_before": p.tokens_before, "delta": p.delta} for p in found.parts],
        "totals": {"before": found.tokens_before, "after": found.tokens_after,
                   "delta": found.tokens_after - found.tokens_before},
        "cached_prefix": {"before": found.cached_before, "after": found.cached_after},
        "cache_break": None if cut is None else {"part": cut.part, "status": cut.status,
                                                 "index": cut.index},
    }
