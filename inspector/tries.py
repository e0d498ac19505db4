"""A try: one real model call with a session's next request, answered to the caller only.

The request is the one the inspector shows — the session's stored overrides, the try's own on
top, and an optional extra user message — assembled through the run's real chain. Nothing is
added to the session and no run is made; a tool call in the answer is returned, never run. The
call is held against the tenant's quota as a run's calls are, written as a ``context_try``
usage row and audited as ``context.try`` (part ids and the model, never text).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from django.db import transaction
from opentelemetry.trace import Span, SpanKind

from accounts import prices
from accounts.audit import audit_record
from accounts.models import AuditAction, Member, UsagePurpose, UsageRecord
from accounts.usage import quota_release
from hango_project.config import hango
from hango_project.errors import QuotaExceeded, Unprocessable
from harness import streamed, telemetry
from harness.context import Override, OverrideSet, part_kind
from harness.errors import ProviderError, QuotaReached
from harness.inspect import assemble, left_out
from harness.loop import Loop
from harness.messages import Message as HMessage
from harness.messages import Response, Usage, UsageSource
from harness.middleware import summarization
from harness.state import State
from harness.tokens.tokenizers import tokenizer_for
from inspector.selectors import with_agent_and_tenant
from runs.execution.assembly import DbBudget, build_loop, new_state, provider_settings
from runs.execution.history import session_history
from runs.intake.admission import quota_admit
from runs.models import Session


@dataclass(frozen=True, kw_only=True)
class Tried:
    response: Response
    excluded: list[str]


def try_overrides(*, exclude: Sequence[str], replace: dict[str, str]) -> list[Override]:
    """A try's own overrides, on top of the stored ones: any part may be excluded; a system or
    message part (or the summary) may be replaced, a tool part not."""
    problems = [f"{p!r} names no part." for p in [*exclude, *replace] if part_kind(p) is None]
    problems += [f"{p!r}: a tool can only be excluded." for p in replace
                 if part_kind(p) == "tool"]
    problems += [f"{p!r} is both excluded and replaced." for p in replace if p in exclude]
    if problems:
        raise Unprocessable("These overrides cannot be tried.", detail={"overrides": problems})
    return ([Override(part=p, action="exclude") for p in dict.fromkeys(exclude)]
            + [Override(part=p, action="replace", replacement=t) for p, t in replace.items()])


def _release(budget: DbBudget | None) -> None:
    if budget is not None:
        quota_release(holds=budget.held)


def _check_no_summary_pending(report: summarization.SummarizationReport | None) -> None:
    """A try sends what a run would: a request a run compacts with the stored summary goes out
    compacted; one whose summary a run would make first cannot be tried (a try makes none)."""
    if report is not None and report.summary_pending:
        raise Unprocessable(
            f"The request is over the agent's summarization budget ({report.tokens:,} of "
            f"{report.budget:,} tokens): a run would summarize its older messages first, and a "
            "try makes no summary. Exclude parts to bring it under the budget.",
            detail={"tokens": report.tokens, "budget": report.budget})


def _history(session: Session, message: str | None) -> list[HMessage]:
    """The history the try sends: the stored one, ``message`` after it; refused when it ends
    with the agent's answer (sent as it is, the model would continue its own last answer)."""
    history = session_history(session.pk, reuse_decoded=True)
    if message is not None:
        history.append(HMessage.user(message))
    if not history or history[-1].role == "assistant":
        raise Unprocessable("The session's history ends with the agent's answer: give a "
                            "message to try it with.", detail={"message": ["required here"]})
    return history


def _loop(session: Session) -> tuple[Loop, DbBudget | None]:
    """The run's loop for one attempt within the try's timeout (a person is waiting for the
    answer), its calls held against the tenant's quota where it has one."""
    settings = replace(provider_settings(timeout_seconds=hango().context_try_timeout),
                       max_retries=0)
    budget = DbBudget(session.tenant_id) if session.tenant.token_quota is not None else None
    return build_loop(session.agent, session, capture_only=True, settings=settings,
                      budget=budget), budget


def _record_usage(chat: Span, response: Response) -> None:
    usage = response.usage
    chat.set_attributes({
        telemetry.ATTR_GEN_AI_RESPONSE_FINISH: [response.stop_reason],
        telemetry.ATTR_GEN_AI_INPUT_TOKENS: usage.input_tokens,
        telemetry.ATTR_GEN_AI_OUTPUT_TOKENS: usage.output_tokens,
        telemetry.ATTR_CACHE_READ_TOKENS: usage.cache_read_tokens,
        telemetry.ATTR_CACHE_WRITE_TOKENS: usage.cache_write_tokens})
    if total := usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens:
        telemetry.cache_read_ratio.record(usage.cache_read_tokens / total)


def _record_call(loop: Loop, started: float, usage: Usage | None, error: str | None = None) -> None:
    """A try's model call in the model metrics, its purpose ``context_try``."""
    telemetry.record_model_call(provider=loop.provider.name, model=loop.model,
                                purpose=UsagePurpose.CONTEXT_TRY.value, usage=usage,
                                seconds=time.perf_counter() - started, error=error)


def _call(loop: Loop, state: State, extra: Sequence[Override],
          budget: DbBudget | None) -> tuple[Response, UsageSource, list[str], OverrideSet]:
    """The call under its ``context_try`` and ``chat`` spans: the answer (its usage counted
    when the server sent none), where its usage comes from, the parts left out and the
    overrides applied."""
    attrs = {telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_CHAT,
             telemetry.ATTR_GEN_AI_PROVIDER: loop.provider.name,
             telemetry.ATTR_GEN_AI_REQUEST_MODEL: loop.model, telemetry.ATTR_CONTEXT_TRY: True}
    with telemetry.span(telemetry.SPAN_CONTEXT_TRY, kind=SpanKind.SERVER), \
            telemetry.span(telemetry.SPAN_CHAT, attrs, kind=SpanKind.CLIENT) as chat:
        # Assembled inside the chat span, as a run's request is: the overrides' attributes and
        # events land on it.
        before, after, overrides, *_ = assemble(loop, state, extra)
        _check_no_summary_pending(summarization.report(state))
        started = time.perf_counter()
        request = after.to_provider_request()
        try:
            response = loop.provider.complete(request)
        except QuotaReached as exc:  # its worst case does not fit: it was not sent
            raise QuotaExceeded(str(exc)) from None
        except ProviderError as exc:
            _record_call(loop, started, None, exc.code)
            telemetry.context_tries.add(1, {telemetry.ATTR_CONTEXT_OUTCOME: "failed"})
            _release(budget)
            raise
        usage, source = streamed.accounted(
            request, response, tokenizer_for(f"{loop.provider.name}:{loop.model}"))
        response = replace(response, usage=usage)
        _record_call(loop, started, response.usage)
        _record_usage(chat, response)
    telemetry.context_tries.add(1, {telemetry.ATTR_CONTEXT_OUTCOME: "ok"})
    return response, source, left_out(before, after), overrides


def _written(session: Session, loop: Loop, response: Response, budget: DbBudget | None, *,
             source: UsageSource, excluded: list[str], overrides: OverrideSet, with_message: bool,
             actor: Member | None) -> None:
    """The try's usage row and audit row, the call's hold released, in one transaction."""
    usage = response.usage
    with transaction.atomic():
        _release(budget)  # the call's worst case becomes what it spent
        UsageRecord.objects.create(
            tenant_id=session.tenant_id, session=session, run=None, agent_id=session.agent_id,
            purpose=UsagePurpose.CONTEXT_TRY, provider=loop.provider.name, model=loop.model,
            usage_source=source, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens, dedupe_key=f"try:{uuid.uuid4()}",
            **prices.columns_for(session.tenant_id, loop.provider.name, loop.model, usage))
        audit_record(actor=actor, tenant=session.tenant_id, action=AuditAction.CONTEXT_TRY,
                     obj_type="session", obj_id=session.pk,
                     detail={"excluded": excluded, "replaced": [
                         o.part for o in overrides.overrides if o.action == "replace"],
                         "model": session.agent.model, "with_message": with_message})


def context_try(*, session: Session, extra: Sequence[Override], message: str | None,
                actor: Member | None) -> Tried:
    """One real model call with the session's next request — its stored overrides and ``extra``
    on top, ``message`` as one more user message — answered to the caller only: nothing is
    added to the session, no run is made, a tool call in the answer is returned, never run.
    The call is a ``context_try`` usage row of the tenant (402 when its quota is spent, or
    cannot cover the call's worst case, held as a run's calls are) and a ``context.try`` audit
    row (part ids and the model, never text)."""
    session = with_agent_and_tenant(session)
    history = _history(session, message)
    with transaction.atomic():
        quota_admit(session.tenant_id)
    loop, budget = _loop(session)
    response, source, excluded, overrides = _call(loop, new_state(session, history), extra,
                                                  budget)
    _written(session, loop, response, budget, source=source, excluded=excluded,
             overrides=overrides, with_message=message is not None, actor=actor)
    return Tried(response=response, excluded=excluded)
