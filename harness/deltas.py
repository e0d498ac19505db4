"""Where the text a streaming model writes goes as it arrives: the :class:`DeltaSink` protocol,
and :func:`collect`, which hands a stream's text deltas to one and returns its final response.

The loop (:mod:`harness.loop`) consumes a stream inside its innermost model handler, so the
chain's wrappers still see one model call and one response; the sink is how the text reaches a
reader before the turn is committed whole (in the server, ``runs/live/relay.py`` publishes it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, assert_never

from harness.errors import ProviderError
from harness.messages import Response
from harness.providers.base import StreamDone, StreamEvent, TextDelta


class DeltaSink(Protocol):
    """Where the text a model streams goes as it arrives. Called on the run's thread between
    two events of the stream: neither method may raise or block for long (a publisher drops
    what it cannot send)."""

    def delta(self, turn: int, index: int, text: str) -> None:
        """A text delta of the model call of turn ``turn`` (``index`` counts the call's deltas
        from 0), as the model writes it."""
        ...

    def end(self, turn: int, count: int) -> None:
        """The stream of turn ``turn``'s model call is over, after ``count`` deltas (at least
        one), whether it ended with a response or an error."""
        ...


def collect(events: Iterator[StreamEvent], sink: DeltaSink, turn: int) -> Response:
    """The final response of a stream, each text delta passed to ``sink`` as it arrives."""
    index = 0
    try:
        for event in events:
            match event:
                case TextDelta(text=text):
                    sink.delta(turn, index, text)
                    index += 1
                case StreamDone(response=response):
                    return response
                case unreachable:
                    assert_never(unreachable)
        raise ProviderError("the model's stream ended without its final response")
    finally:
        if index:
            sink.end(turn, index)
