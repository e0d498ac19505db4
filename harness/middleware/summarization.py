"""SummarizationMiddleware: keep the outgoing request within the agent's token budget.

Each request is measured (:mod:`harness.tokens.estimator`; near the budget — 90 to 125% of it — the
provider's own counter when it has one). Over the budget, older messages are replaced **in the
outgoing request only** by a user message "Summary of the earlier conversation: …" made by a
model call (usage purpose ``summarize``), keeping the latest messages, cut where
:func:`harness.history.safe_cut` keeps a call with its results. Stored history never changes.
The summary is saved on the session with the seq of the last message it covers, so later turns
and runs reuse it, and extend it with only the newer messages when the cut moves on.

Agent config ``summarization`` (``{"enabled": false}`` turns it off): ``trigger_tokens``
(absolute) or ``trigger_fraction`` of the context window (default 0.8), ``keep_messages``
(default 6; a call is kept with its results, and fewer are kept when they alone would not fit),
``summary_max_tokens`` (default 1024).

:func:`report` (``state.scratch["summarization"]``, a :class:`SummarizationReport` about the
request just assembled; per batch, not persisted) tells the context inspector whether it needed
compaction (``would_compact``), which seqs the summary part stands for and how the summary came
about. Capture-only (inspect) measures exactly as a run does — the provider's counter near the
budget included — and compacts the same way, but calls no summarizer and saves nothing: the
stored summary is reused as a run would reuse it; one that a run would make or extend is sent
empty and reported ``summary_pending``. If summarizing fails, the
request goes out whole when it fits the context window, else the run fails with a readable
error; a half-rewritten request is never sent. The slot follows filesystem and context
overrides, so it measures the request they shaped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness import context, history, telemetry
from harness.agent import SummarizationOptions
from harness.chain import ModelHandler, ModelRequest
from harness.deps import StackConfig
from harness.errors import ConfigurationError, HarnessError, ProviderError
from harness.messages import Message, Response
from harness.middleware._summarizer import PURPOSE, SYSTEM_PROMPT, Summarizer  # noqa: F401
from harness.providers.base import Provider
from harness.providers.counting import count_request
from harness.state import State
from harness.stores import Summary, SummaryStore
from harness.tokens.base import ESTIMATE, HistoryTotal, Tokenizer, messages_tokens

log = logging.getLogger(__name__)

NAME = "summarization"
WHY = ("skipped when the agent's config turns it off or a bare stack has no provider; replaces "
       "older messages of the outgoing request by a model-made summary over the token budget")
# Between these shares of the budget the provider's counter (if any) is asked: where the
# tokenizer's count could fall on the wrong side of the budget. Above, the call compacts either
# way, and no call is spent on a network round trip — the inspector's least of all.
EXACT_FROM, EXACT_UNTIL = 0.9, 1.25

SUMMARY_ROOM = 256  # tokens kept free for a new summary when choosing the cut


@dataclass(kw_only=True)
class SummarizationReport:
    would_compact: bool = False  # the last request assembled was over the budget
    tokens: int = 0  # its size before compaction
    tokens_after: int = 0  # and after (0: not compacted)
    budget: int = 0
    summarized: int = 0  # messages the summary replaced in the last request sent (0: none)
    summary_from_seq: int | None = None  # the stored messages the summary part stands for
    summary_through_seq: int | None = None
    # How the summary came about: "reused" (the stored one, sent as it is), "extended" or
    # "created" (a summarizer call; capture-only makes none, so its text is not known yet and
    # the request carries an empty one: ``summary_pending``). None when nothing was summarized.
    summary_outcome: str | None = None
    summary_pending: bool = False
    summary_max_tokens: int = 0  # the most a summary made for the request may take
    # Capture-only: why a run would fail here instead of calling the model (context_overflow).
    would_fail: str | None = None


class SummarizationFailed(HarnessError):
    code = "context_overflow"


@dataclass(frozen=True, kw_only=True)
class _Current:
    """The summary the run works from and the last message it covers: this run's message
    object, or a stored seq (a summary loaded from the session)."""

    text: str
    last: Message | None
    through_seq: int | None


class SummarizationMiddleware:
    name = NAME

    def __init__(self, *, provider: Provider | None, model: str, context_window: int,
                 options: SummarizationOptions, store: SummaryStore | None = None,
                 capture_only: bool = False, tokenizer: Tokenizer = ESTIMATE) -> None:
        o = options
        if min(context_window, o.keep_messages, o.summary_max_tokens, o.trigger_tokens or 1) < 1 \
                or not 0 < o.trigger_fraction <= 1:
            raise ConfigurationError("summarization: sizes must be positive and "
                                     "trigger_fraction in (0, 1]")
        self.provider, self.model, self.store = provider, model, store
        self.context_window, self.keep = context_window, o.keep_messages
        self.summary_max_tokens, self.capture_only = o.summary_max_tokens, capture_only
        self.budget = o.trigger_tokens or int(context_window * o.trigger_fraction)
        self.summarizer = Summarizer(
            provider=provider, model=model, max_tokens=o.summary_max_tokens,
            part_tokens=max(2_000, int(context_window * 0.6) - 2 * o.summary_max_tokens))
        self._current: _Current | None = None
        self.tokenizer = tokenizer
        self._history = HistoryTotal(tokenizer)  # the run's history, counted incrementally

    def before_run(self, state: State) -> None:
        stored = self.store.load() if self.store is not None else None
        self._current = None if stored is None else _Current(
            text=stored.text, last=None, through_seq=stored.through_seq)

    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response:
        fixed = self._fixed(req)
        tokens = self._history(req.request.messages) + fixed
        if EXACT_FROM * self.budget <= tokens <= EXACT_UNTIL * self.budget:
            # Capture-only too: the inspector's would_compact must be the run's, counter and all.
            tokens, _ = count_request(req.to_provider_request(), tokenizer=self.tokenizer,
                                      provider=self.provider)
        st = SummarizationReport(would_compact=tokens > self.budget, tokens=tokens,
                                 budget=self.budget, summary_max_tokens=self.summary_max_tokens)
        req.state.scratch[NAME] = st
        if not st.would_compact:
            return next(req)
        why = "no older messages can be summarized away"
        try:
            compacted = self._compact(req, st, fixed)
        except ProviderError as exc:
            telemetry.summarize_calls.add(1, {telemetry.ATTR_SUMMARY_OUTCOME: "failed"})
            telemetry.record_event(telemetry.EVENT_SUMMARY_FAILED, {
                telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_REASON: exc.code})
            compacted, why = None, f"summarizing it failed ({exc})"
        sent, failure = self._what_is_sent(req, compacted, tokens, st, why)
        if failure is None:
            return next(sent)
        if self.capture_only:  # shown as assembled; the report says the run would stop here
            st.would_fail = failure
            return next(sent)
        raise SummarizationFailed(failure)

    def _what_is_sent(self, req: ModelRequest, compacted: ModelRequest | None, tokens: int,
                      st: SummarizationReport, why: str) -> tuple[ModelRequest, str | None]:
        """The request that goes out — compacted when it fits the window, whole when it could
        not be compacted and fits anyway — or why the run fails instead (with the request that
        would have gone out, for a capture to show)."""
        room = self.context_window - req.request.max_tokens
        if compacted is not None:
            if st.tokens_after <= room:
                return compacted, None
            tokens, why = st.tokens_after, "even its latest messages alone are too long"
        elif tokens <= room:
            if not self.capture_only:
                log.warning("request of %d tokens sent whole over the %d-token budget: %s",
                            tokens, self.budget, why)
            return req, None
        return compacted or req, (
            f"The conversation is too long for the model: the next request is about {tokens} "
            f"tokens, the context window holds {self.context_window}, and {why}. Start a new "
            "session, or try again later.")

    def _fixed(self, req: ModelRequest) -> int:
        """The request's system blocks and tools, with the framing that is not the messages':
        its part that compaction cannot shrink."""
        return self.tokenizer.request(replace(req.to_provider_request(), messages=()))

    def _messages(self, messages: Sequence[Message]) -> int:
        return messages_tokens(self.tokenizer, messages)

    def _compact(self, req: ModelRequest, st: SummarizationReport,
                 fixed: int) -> ModelRequest | None:
        """The request with a summary in place of the older messages (``fixed``: the tokens of
        its system blocks and tools); None if none can go."""
        messages = req.request.messages
        room = min(self.summary_max_tokens, SUMMARY_ROOM + (
            self.tokenizer.text(self._current.text) if self._current else 0))
        keep, cut = self.keep, history.safe_cut(messages, self.keep)
        while keep > 1 and (fixed + room + self._messages(messages[cut:])
                            > self.budget):
            keep //= 2
            cut = history.safe_cut(messages, keep)
        if cut == 0:
            return None
        cut, text, outcome = self._summary_for(messages, cut, req.state)
        compacted = (*_summary_head(text or "", messages[cut:], req.state), *messages[cut:])
        if problems := history.validate(compacted):  # only when the history was invalid already
            log.error("compacted history not sent: %s", "; ".join(map(str, problems)))
            return None
        seqs = [m.seq for m in messages[:cut] if m.seq is not None]
        st.summarized, st.summary_outcome, st.summary_pending = cut, outcome, text is None
        st.summary_from_seq, st.summary_through_seq = min(seqs, default=None), max(seqs,
                                                                                   default=None)
        st.tokens_after = fixed + self._messages(compacted)
        if self.capture_only:
            return replace(req, request=replace(req.request, messages=compacted))
        telemetry.record_event(telemetry.EVENT_SUMMARIZED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_SUMMARY_OUTCOME: outcome,
            telemetry.ATTR_SUMMARY_MESSAGES: cut,
            telemetry.ATTR_SUMMARY_THROUGH_SEQ: st.summary_through_seq or 0,
            telemetry.ATTR_SUMMARY_TOKENS_BEFORE: st.tokens,
            telemetry.ATTR_SUMMARY_TOKENS_AFTER: st.tokens_after})
        telemetry.record_event(telemetry.EVENT_REQUEST_REWRITTEN, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_REASON: f"summarized {cut}"})
        return replace(req, request=replace(req.request, messages=compacted))

    def _summary_for(self, messages: tuple[Message, ...], cut: int,
                     state: State) -> tuple[int, str | None, str]:
        """(cut, text, outcome): the current summary reused as is (the cut moves to where it
        ends) or extended with the messages after it; a new one when it is not a prefix here.
        Capture-only, a summary that would need a call has no text (None)."""
        current = self._current
        end = None if current is None else _covered_end(messages, current)
        if current is not None and end is not None:
            if cut <= end < len(messages) and not messages[end].tool_results:
                return end, current.text, "reused"
            if end < cut:
                return cut, self._new(messages, cut, current.text, end, state), "extended"
        return cut, self._new(messages, cut, None, 0, state), "created"

    def _new(self, messages: tuple[Message, ...], cut: int, previous: str | None, start: int,
             state: State) -> str | None:
        if self.capture_only:
            return None
        text = self.summarizer.summarize(messages[start:cut], previous, state)
        last = messages[cut - 1]
        self._current = _Current(text=text, last=last, through_seq=last.seq)
        if self.store is not None and last.seq is not None:
            self.store.save(Summary(text=text, through_seq=last.seq))
        return text


def _summary_head(text: str, tail: tuple[Message, ...], state: State) -> tuple[Message, ...]:
    """The summary message in front of the kept messages, as the run's ``summary`` override (the
    context inspector's) says: replaced by the user's text, or left out — unless leaving it out
    would start the history with the kept assistant message, which is never sent."""
    override = context.active(state).get(context.SUMMARY)
    if override is None:
        return (history.summary_message(text),)
    if override.action == "replace":
        assert override.replacement is not None
        return (history.summary_message(override.replacement),)
    if not history.validate(tail):
        return ()
    telemetry.record_event(telemetry.EVENT_CONTEXT_OVERRIDES_DROPPED, {
        telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_CONTEXT_PART: context.SUMMARY})
    return (history.summary_message(text),)


def report(state: State) -> SummarizationReport | None:
    """What the middleware found about the request assembled last in this batch."""
    value = state.scratch.get(NAME)
    return value if isinstance(value, SummarizationReport) else None


def _covered_end(messages: tuple[Message, ...], current: _Current) -> int | None:
    """The index just after the last message ``current`` covers; None when it is not here."""
    if current.last is not None:
        for i in range(len(messages) - 1, -1, -1):
            if messages[i] is current.last:
                return i + 1
    if current.through_seq is not None:
        covered = [i for i, m in enumerate(messages)
                   if m.seq is not None and m.seq <= current.through_seq]
        return covered[-1] + 1 if covered else None
    return None


def from_config(cfg: StackConfig) -> SummarizationMiddleware | None:
    options = cfg.agent.config.summarization
    if not options.enabled or (cfg.deps.provider is None and not cfg.capture_only):
        return None
    return SummarizationMiddleware(
        provider=cfg.deps.provider, model=cfg.deps.model, context_window=cfg.deps.context_window,
        options=options, store=cfg.deps.summaries, capture_only=cfg.capture_only,
        tokenizer=cfg.deps.tokenizer)
