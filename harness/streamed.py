"""A streamed model call that a cancel stops, and what a failed call leaves in the run.

A cancel used to wait for the turn boundary: a model call already streaming ran to its end, the
server writing for a client that had left. :func:`collect_cancellable` makes the call's
:class:`~harness.providers.abort.CallAbort` and hands it to the run's control when that control
can fire it (:class:`Aborting`: in the server, the process's watch thread, within half a cancel
poll interval of the flag); the adapter shuts the stream's socket down, the read ends, and the
call ends in :class:`CallCancelled`, carrying what it had used — the request's input and the
deltas received so far, counted with the model family's tokenizer, since the provider never
sent its usage. The loop records that usage and ends the run cancelled.

A failed call's provider answer can be long (a 2 KB validation dump): :func:`failure` keeps the
run's error message to a short first line and the whole answer in a ``model.failed`` event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from harness.deltas import DeltaSink, collect
from harness.errors import HarnessError, ProviderError
from harness.messages import Message, Request, Response, TextBlock, Usage, UsageSource
from harness.providers import abort
from harness.providers.base import Provider, StreamEvent
from harness.state import State
from harness.steps import Failed, Interrupted, TurnResult
from harness.tokens.base import Tokenizer

EVENT_MODEL_FAILED = "model.failed"  # the run event a failed model call emits, its whole answer
ERROR_LINE_CHARS = 200  # the most of a provider's message a run's error keeps


@runtime_checkable
class Aborting(Protocol):
    """A run control that can abort a call in flight when a cancel is seen."""

    def abort_on_cancel(self, handle: abort.CallAbort) -> Callable[[], None]:
        """Fire ``handle`` once a cancel is seen (at once if one was); returns the undo."""
        ...


class CallCancelled(HarnessError):
    """A streamed call stopped by a cancel; ``spent`` is what it had used, as counted."""

    code = "cancelled"

    def __init__(self, spent: tuple[Usage, UsageSource], deltas: int) -> None:
        super().__init__(f"the model call was cancelled after {deltas} deltas")
        self.spent = spent


def counted(request: Request, received: Message, tokenizer: Tokenizer,
            ) -> tuple[Usage, UsageSource]:
    """A call's usage as hango counts it: the request it sent and the content it received, with
    ``tokenizer`` (the family's own: ``counted``; the estimate: ``estimated``)."""
    usage = Usage(input_tokens=tokenizer.request(request),
                  output_tokens=sum(tokenizer.block(b) for b in received.content))
    return usage, "estimated" if tokenizer.source == "estimate" else "counted"


def accounted(request: Request, response: Response, tokenizer: Tokenizer,
              ) -> tuple[Usage, UsageSource]:
    """The call's usage: the provider's, or, when its answer carried none (all four counters
    zero: no call sends nothing), :func:`counted`. Never a silent zero."""
    if response.usage != Usage():
        return response.usage, "provider"
    return counted(request, response.message, tokenizer)


class _Recording:
    """The loop's sink, with the text that went through it kept."""

    def __init__(self, sink: DeltaSink) -> None:
        self.sink, self.texts = sink, list[str]()

    def delta(self, turn: int, index: int, text: str) -> None:
        self.texts.append(text)
        self.sink.delta(turn, index, text)
        if abort.aborted():  # aborted between two reads: stop at this delta
            raise _Stop

    def end(self, turn: int, count: int) -> None:
        self.sink.end(turn, count)


class _Stop(Exception):
    pass


def complete(provider: Provider, request: Request, *,
             stream: Callable[[Request], Iterator[StreamEvent]] | None, sink: DeltaSink | None,
             turn: int, control: Any, tokenizer: Tokenizer) -> Response:
    """The provider's response: its stream's last event when the loop streams (each text delta
    handed to ``sink`` on the way; a cancel stops it), else its whole answer."""
    if stream is None or sink is None:
        return provider.complete(request)
    return collect_cancellable(lambda: stream(request), request=request, sink=sink, turn=turn,
                               control=control, tokenizer=tokenizer)


def collect_cancellable(events: Callable[[], Iterator[StreamEvent]], *, request: Request,
                        sink: DeltaSink, turn: int, control: Any,
                        tokenizer: Tokenizer) -> Response:
    """The stream's response (:func:`harness.deltas.collect`), or :class:`CallCancelled` when
    the run's cancel aborted it first."""
    handle = abort.CallAbort()
    undo = control.abort_on_cancel(handle) if isinstance(control, Aborting) else None
    recording = _Recording(sink)
    try:
        with abort.current(handle):
            try:
                return collect(events(), recording, turn)
            except (ProviderError, _Stop):
                if not handle.aborted:
                    raise
        received = Message(role="assistant", content=(TextBlock(text="".join(recording.texts)),))
        raise CallCancelled(counted(request, received, tokenizer), len(recording.texts))
    finally:
        if undo is not None:
            undo()


def failure(exc: HarnessError) -> tuple[Failed, tuple[str, dict[str, Any]] | None]:
    """The failed step for ``exc``; for a provider error, its message cut to its first line
    and the event that keeps it whole."""
    message = str(exc)
    if not isinstance(exc, ProviderError):
        return Failed(exc.code, message), None
    line = message.strip().split("\n", 1)[0]
    if len(line) > ERROR_LINE_CHARS:
        line = line[:ERROR_LINE_CHARS - 1].rstrip() + "…"
    return Failed(exc.code, line), (EVENT_MODEL_FAILED, {
        "code": exc.code, "provider": exc.provider, "status": exc.status, "message": message})


def ended(state: State, number: int, exc: HarnessError) -> TurnResult:
    """Turn ``number``, ended by its model call's ``exc``: cancelled (the call's usage already
    recorded in ``state``), or failed."""
    if isinstance(exc, CallCancelled):
        next_step: Failed | Interrupted = Interrupted("cancelled")
    else:
        next_step, event = failure(exc)
        if event is not None:
            state.emit(*event)
    return TurnResult(turn=number, usage=tuple(state.take_usage()),
                      events=tuple(state.take_events()), next=next_step)
