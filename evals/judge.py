"""The model judge: one model call through the provider adapters asks whether the case's
answer meets a rubric; its verdict is parsed strictly (a JSON object ``{"pass": bool,
"reason": str}`` and nothing else, else the grader fails saying why). The call is held
against the tenant's quota and written as an ``eval`` usage row of the case's session (a
grading done again after a crash calls again, and that call is recorded too: it was made)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.db import transaction

from accounts import prices
from accounts.models import UsagePurpose, UsageRecord
from evals.grader_specs import JudgeGrader
from evals.graders import Verdict
from evals.models import EvalCaseResult
from hango_project.errors import QuotaExceeded
from harness.errors import HarnessError
from harness.messages import Message, Request, TextBlock
from harness.providers import resolve_provider
from harness.streamed import accounted
from harness.tokens.tokenizers import tokenizer_for
from runs.execution.assembly import provider_settings
from runs.intake.admission import quota_admit

INSTRUCTIONS = (
    "You grade an AI agent's answer against a rubric. Read the conversation's user turns, the "
    "agent's final answer and the rubric. Reply with exactly one JSON object and nothing else: "
    '{"pass": true or false, "reason": "one or two sentences"}.')


def prompt(turns: list[str], answer: str, rubric: str) -> str:
    said = "\n".join(f"<turn>\n{t}\n</turn>" for t in turns)
    return (f"<user_turns>\n{said}\n</user_turns>\n<answer>\n{answer}\n</answer>\n"
            f"<rubric>\n{rubric}\n</rubric>")


def parse_verdict(text: str) -> tuple[bool, str]:
    """``(passed, reason)`` of the judge's reply; ValueError saying what is wrong with it."""
    try:
        data: Any = json.loads(text.strip())
    except ValueError:
        raise ValueError(f"the judge's reply is not JSON: {text[:200]!r}") from None
    if not isinstance(data, dict) or set(data) != {"pass", "reason"}:
        raise ValueError('the judge\'s reply is not {"pass", "reason"}: ' + repr(text[:200]))
    if not isinstance(data["pass"], bool) or not isinstance(data["reason"], str):
        raise ValueError("the judge's pass is not a boolean, or its reason not text")
    return data["pass"], data["reason"]


def judge(grader: JudgeGrader, *, result: EvalCaseResult, answer: str, index: int) -> Verdict:
    """The judge's verdict on ``answer`` (the case's turns as context)."""
    label = "judge"
    name = grader.model or result.eval_run.agent.model
    turns = list(result.case.turns) if result.case else []
    try:
        with transaction.atomic():
            quota_admit(result.eval_run.tenant_id)
    except QuotaExceeded as exc:
        return Verdict(grader=label, passed=False, reason=f"the judge was not called: {exc}")
    try:
        provider, model = resolve_provider(name, provider_settings())
        request = Request(model=model, system=(TextBlock(text=INSTRUCTIONS),),
                          messages=(Message.user(prompt(turns, answer, grader.rubric)),),
                          max_tokens=1024, temperature=0)
        response = provider.complete(request)
    except HarnessError as exc:
        return Verdict(grader=label, passed=False, reason=f"the judge's call failed: {exc}")
    usage, source = accounted(request, response, tokenizer_for(name))
    _record(result, provider.name, model, usage, source)
    try:
        passed, reason = parse_verdict(response.message.text)
    except ValueError as exc:
        return Verdict(grader=label, passed=False, reason=str(exc))
    return Verdict(grader=label, passed=passed, reason=reason)


def _record(result: EvalCaseResult, provider: str, model: str, usage: Any,
            source: str) -> None:
    """The judge's usage row (no run: a case's cost is its runs')."""
    tenant_id = result.eval_run.tenant_id
    UsageRecord.objects.create(
        tenant_id=tenant_id, session_id=result.session_id, run=None,
        agent_id=result.eval_run.agent_id, purpose=UsagePurpose.EVAL, provider=provider,
        model=model, usage_source=source, input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens, dedupe_key=f"judge:{uuid.uuid4()}",
        **prices.columns_for(tenant_id, provider, model, usage))
