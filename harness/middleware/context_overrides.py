"""ContextOverridesMiddleware: the run's context overrides, loaded once and applied to the history.

``before_run`` loads the agent's and the session's overrides (an
:class:`~harness.stores.OverrideStore`) once, into the run's private state
(:data:`harness.context.NAME`); a continued or resumed run keeps the set it started with, so a
run never sees its context change between turns — except a run resuming a batch paused for
approval, which loads the set saved now: a person decided in between, and may have edited the
context to go with the decision (what the inspector showed during the pause). The chain
applies the system parts from there and the allowlist the tool parts (:mod:`harness.context`
says why there); this wrapper applies the message parts to the outgoing request: an excluded
message is left out — with its pair, a batch's calls and their results go together — and a
replaced one is sent with the replacement text. The result is checked with the history
validator: if the set no longer leaves a valid request (the history changed since it was
saved), the request goes out without the message overrides, logged at error level and recorded
as a span event. An invalid request is never sent.

Every chat span of the run gets ``hango.context.overrides`` (how many overrides the run
applies) and ``hango.context.excluded_tokens`` (what they took out of this request), so a run
whose context was edited by hand shows in traces; an override whose part is gone is recorded
as ``agent.context_override_stale`` and does nothing until the part returns.

The slot sits right before summarization, so compaction and the token budget see the filtered
history.
"""

from __future__ import annotations

import logging
import operator
from dataclasses import replace

from harness import context, history, telemetry
from harness.chain import ModelHandler, ModelRequest
from harness.context import NAME, OverrideSet, part_kind
from harness.deps import StackConfig
from harness.messages import Response
from harness.middleware._stores import load_or_none
from harness.state import State
from harness.stores import OverrideStore
from harness.tokens.base import ESTIMATE, Tokenizer, messages_tokens

log = logging.getLogger(__name__)

WHY = ("skipped when the run has no override store; the inspector's context overrides, loaded "
       "once per run, message parts applied before summarization sees the history")


def keeps_its_overrides(state: State) -> bool:
    """A run restored from ``state`` applies the set it loaded when it started, not the one
    saved now: it loaded one, and is not resuming from a pause for approval."""
    return NAME in state.private and state.pending_batch is None


class ContextOverridesMiddleware:
    name = NAME

    def __init__(self, *, store: OverrideStore, tokenizer: Tokenizer = ESTIMATE) -> None:
        self.store = store
        self.tokenizer = tokenizer

    def before_run(self, state: State) -> None:
        if keeps_its_overrides(state):
            return  # a continued or resumed run keeps the set it started with
        loaded = load_or_none(self.store.load, middleware=NAME, run_id=state.run_id)
        if loaded is None and NAME in state.private:
            return  # a resume whose reload failed keeps the set it had
        context.set_active(state, OverrideSet(overrides=tuple(loaded or [])))

    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response:
        overrides = context.active(req.state)
        stale = 0
        if overrides:
            stale = _record_stale(req, overrides)
            req = self._apply(req, overrides)
        response = next(req)
        record = context.applied(req.state)
        count = self.tokenizer
        excluded = (sum(count.block(s.block) for s in record.system)
                    + sum(count.tool(t.definition) for t in record.tools)
                    + messages_tokens(count, record.messages))
        # The overrides that apply: a stale one does nothing (as the inspector counts them).
        telemetry.set_attributes({telemetry.ATTR_CONTEXT_OVERRIDES: len(overrides) - stale,
                                  telemetry.ATTR_CONTEXT_EXCLUDED_TOKENS: excluded})
        return response

    def _apply(self, req: ModelRequest, overrides: OverrideSet) -> ModelRequest:
        if "message" not in overrides.kinds:  # system and tool overrides apply elsewhere
            return req
        messages = req.request.messages
        if partners := context.with_partners(overrides.excluded("message"), messages):
            # Saved sets hold their pairs already; one that does not (the history changed
            # since) still never sends a call without its results.
            for part in partners:
                telemetry.record_event(telemetry.EVENT_CONTEXT_OVERRIDE_PAIRED,
                                       {telemetry.ATTR_CONTEXT_PART: part})
            overrides = overrides.merged(
                context.Override(part=p, action="exclude") for p in partners)
        kept, excluded = context.apply_messages(messages, overrides)
        if len(kept) == len(messages) and all(map(operator.is_, kept, messages)):
            return req  # none of the overrides is for a message of this request
        if problems := history.validate(kept):
            log.error("context overrides of session %s not applied, they would leave an invalid "
                      "request: %s", req.state.session_id, "; ".join(map(str, problems)))
            telemetry.record_event(telemetry.EVENT_CONTEXT_OVERRIDES_DROPPED, {
                telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_REASON: problems[0].kind})
            return req
        context.applied(req.state).messages.extend(excluded)
        return replace(req, request=replace(req.request, messages=tuple(kept)))


def _record_stale(req: ModelRequest, overrides: OverrideSet) -> int:
    """A span event for each override whose part is not in this request (nor taken out); how
    many there are."""
    present = set(context.part_ids([*req.system, *context.applied(req.state).system], req.tools,
                                   ()))
    # Messages by seq, and only when a message is overridden: the history is the long part.
    seqs = ({m.seq for m in req.request.messages if m.seq is not None}
            if "message" in overrides.kinds else set())
    stale = [o.part for o in overrides.overrides
             if part_kind(o.part) != "summary" and o.part not in present
             and context.message_seq(o.part) not in seqs]
    for part in stale:
        telemetry.record_event(telemetry.EVENT_CONTEXT_OVERRIDE_STALE,
                               {telemetry.ATTR_CONTEXT_PART: part})
    return len(stale)


def from_config(cfg: StackConfig) -> ContextOverridesMiddleware | None:
    if cfg.deps.overrides is None:
        return None
    return ContextOverridesMiddleware(store=cfg.deps.overrides, tokenizer=cfg.deps.tokenizer)
