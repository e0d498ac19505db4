"""The loop's innermost model handler: the request stripped of provenance, the provider called
(streamed to the loop's sink when it streams, stopped by a cancel), and the call's usage
recorded in the state — the provider's, or hango's own count when the answer carried none."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import trace

from harness import fingerprint, streamed, telemetry
from harness.chain import ModelRequest
from harness.deltas import DeltaSink
from harness.errors import HarnessError
from harness.messages import ModelUsage, Request, RequestPrint, Response, Usage, UsageSource
from harness.providers.base import Provider, StreamEvent
from harness.serde import message_to_json
from harness.tokens.base import Tokenizer


class ProviderCall:
    """One model call of the loop's chain, at its innermost end. ``sent`` collects the request
    as it arrived here (what the chain's wrappers made of it); ``control`` may abort a stream."""

    def __init__(self, *, provider: Provider, model: str, purpose: str,
                 stream: Callable[[Request], Iterator[StreamEvent]] | None,
                 deltas: DeltaSink | None, prints: Tokenizer | None, counter: Tokenizer,
                 sent: list[ModelRequest], control: Any) -> None:
        self.provider, self.model, self.purpose = provider, model, purpose
        self.stream, self.deltas, self.prints, self.counter = stream, deltas, prints, counter
        self.sent, self.control = sent, control

    def __call__(self, req: ModelRequest) -> Response:
        self.sent.append(req)
        request = req.to_provider_request()
        if req.state.trace_content:
            trace.get_current_span().set_attributes(telemetry.content_attributes(
                True, telemetry.ATTR_GEN_AI_INPUT_MESSAGES,
                [message_to_json(m) for m in request.messages]))
        started = time.perf_counter()
        try:
            response = streamed.complete(
                self.provider, request, stream=self.stream, sink=self.deltas,
                turn=req.state.turn + 1, control=self.control, tokenizer=self.counter)
        except HarnessError as exc:
            spent = exc.spent if isinstance(exc, streamed.CallCancelled) else None
            self._record_call(started, spent and spent[0], exc.code)
            if spent is not None:  # a cancelled stream spent what it had streamed
                req.state.record_usage(self._usage(*spent))
            raise
        usage, source = streamed.accounted(request, response, self.counter)
        self._record_call(started, usage)
        printed = None if self.prints is None else fingerprint.of_request(req, self.prints)
        req.state.record_usage(self._usage(usage, source, printed))
        return response

    def _usage(self, usage: Usage, source: UsageSource,
               sent: RequestPrint | None = None) -> ModelUsage:
        return ModelUsage(purpose=self.purpose, provider=self.provider.name, model=self.model,
                          usage=usage, source=source, sent=sent)

    def _record_call(self, started: float, usage: Usage | None, error: str | None = None) -> None:
        telemetry.record_model_call(provider=self.provider.name, model=self.model, error=error,
                                    purpose=self.purpose, seconds=time.perf_counter() - started,
                                    usage=usage)
