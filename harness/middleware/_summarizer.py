"""The summarizer behind SummarizationMiddleware: messages in, a summary text out.

Messages become a plain transcript, one line per block (``user: …``, ``assistant called
read_file: {…}``, ``read_file result: …``); a block longer than :data:`CLIP_CHARS` keeps its
start and end, so one huge tool result cannot crowd out the rest. A transcript too long for one
call is summarized in parts, each extending the summary of the parts before it. Every call goes
through the run's provider with ``Request.metadata["purpose"] == "summarize"`` (scripted models
answer it) and is recorded on the run state with usage purpose ``summarize``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import assert_never

from opentelemetry.trace import SpanKind

from harness import streamed, telemetry
from harness.errors import HarnessError, ProviderError
from harness.messages import (
    Message,
    ModelUsage,
    Request,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.providers.base import Provider
from harness.state import State
from harness.tokens.base import ESTIMATE
from harness.tokens.tokenizers import tokenizer_for

PURPOSE = "summarize"
CLIP_CHARS = 4000

SYSTEM_PROMPT = """You summarize the earlier part of a conversation between a user and an AI \
agent that uses tools, so the agent can go on without the full transcript. Keep what it will \
need: the user's goals and instructions (quoted when the wording matters), decisions, facts \
learned from tool results (paths, names, identifiers, numbers, errors), what is done and what \
remains. Leave out pleasantries and repeated output. Write in the conversation's language. \
Reply with the summary only."""


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


def render(message: Message, names: dict[str, str]) -> str:
    """One message as transcript text; ``names`` maps tool_use ids to tool names as seen."""
    lines = []
    for block in message.content:
        match block:
            case TextBlock():
                lines.append(f"{message.role}: {clip(block.text)}")
            case ToolUseBlock():
                names[block.id] = block.name
                args = json.dumps(block.input, ensure_ascii=False)
                lines.append(f"assistant called {block.name}: {clip(args)}")
            case ToolResultBlock():
                error = " (error)" if block.is_error else ""
                shown = "".join(f" [{i.media_type} image]" for i in block.images)
                lines.append(f"{names.get(block.tool_use_id, 'tool')} result{error}: "
                             f"{clip(block.content)}{shown}")
            case _:
                assert_never(block)
    return "\n".join(lines)


def transcript_parts(messages: Sequence[Message], limit: int) -> list[str]:
    """The transcript in parts of at most about ``limit`` tokens (a message is never split)."""
    names: dict[str, str] = {}
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for message in messages:
        text = render(message, names)
        tokens = ESTIMATE.text(text)
        if current and size + tokens > limit:
            parts.append("\n\n".join(current))
            current, size = [], 0
        current.append(text)
        size += tokens
    if current:
        parts.append("\n\n".join(current))
    return parts


class Summarizer:
    def __init__(self, *, provider: Provider | None, model: str, max_tokens: int,
                 part_tokens: int) -> None:
        self.provider, self.model = provider, model
        self.max_tokens, self.part_tokens = max_tokens, part_tokens

    def summarize(self, messages: Sequence[Message], previous: str | None, state: State) -> str:
        """A summary of ``previous`` (an earlier summary, if any) followed by ``messages``."""
        text = previous
        for part in transcript_parts(messages, self.part_tokens):
            text = self._call(part, text, state)
        if text is None:
            raise ProviderError("there was nothing to summarize")
        return text

    def _call(self, transcript: str, previous: str | None, state: State) -> str:
        if self.provider is None:
            raise ProviderError("the run has no provider to summarize with")
        prompt = transcript if previous is None else (
            f"The summary so far:\n\n{previous}\n\nWhat happened after it:\n\n{transcript}\n\n"
            "Write one updated summary that covers both.")
        request = Request(model=self.model, system=(TextBlock(text=SYSTEM_PROMPT),),
                          messages=(Message.user(prompt),), max_tokens=self.max_tokens,
                          metadata={"purpose": PURPOSE})
        attrs = {telemetry.ATTR_GEN_AI_OPERATION: telemetry.SPAN_CHAT,
                 telemetry.ATTR_GEN_AI_PROVIDER: self.provider.name,
                 telemetry.ATTR_GEN_AI_REQUEST_MODEL: self.model,
                 telemetry.ATTR_USAGE_PURPOSE: PURPOSE}
        started = time.perf_counter()
        with telemetry.span(telemetry.SPAN_CHAT, attrs, kind=SpanKind.CLIENT):
            try:
                response = self.provider.complete(request)
            except HarnessError as exc:
                telemetry.record_model_call(provider=self.provider.name, model=self.model,
                                            purpose=PURPOSE, seconds=time.perf_counter() - started,
                                            usage=None, error=exc.code)
                raise
        # A server that sends no usage is counted, never recorded as free (harness.streamed).
        usage, source = streamed.accounted(
            request, response, tokenizer_for(f"{self.provider.name}:{self.model}"))
        telemetry.record_model_call(provider=self.provider.name, model=self.model,
                                    purpose=PURPOSE, seconds=time.perf_counter() - started,
                                    usage=usage)
        state.record_usage(ModelUsage(purpose=PURPOSE, provider=self.provider.name,
                                      model=self.model, usage=usage, source=source))
        telemetry.summarize_calls.add(1, {telemetry.ATTR_SUMMARY_OUTCOME: "ok"})
        if not (text := response.message.text.strip()):
            raise ProviderError("the summarizer answered with no text", provider=self.provider.name)
        return text
