"""PromptCacheMiddleware: mark the end of the stable system prefix for the provider's cache.

A provider prompt cache (Anthropic's ``cache_control``) reuses a request prefix — tools, then
system blocks up to the marked one — when its bytes are the same as on an earlier call. The
mark goes on the system block at the **breakpoint index**: the last block before the first
dynamic one, the blocks that change within or between runs — the file listing
(``system:filesystem``, changed by every file write), the todo list (``system:todo``, rewritten
by every ``write_todos``) and memory (``system:memory:*``, edited by users and by the agent).
With no dynamic block the last block is marked; when the very first block is dynamic nothing
is. Memory comes later in the chain than this slot, so its blocks always fall after the
breakpoint (``harness.stack``).

A provider caches no prefix shorter than its model's minimum (1,024 to 4,096 tokens for Claude,
:func:`harness.providers.models.cache_minimum`): a prefix below it — the tools and the system
blocks up to the breakpoint, framing included, as the run's tokenizer counts them — is not
marked, and the report says so (its ``prefix_tokens`` and ``minimum``). A model with no known
minimum is marked as before.

:func:`report` (``state.scratch["prompt_cache"]``, a :class:`PromptCacheReport` about the last
model call; per batch, not persisted) holds the index and part id of the marked block for the
context inspector (``cached_prefix``, ``cache_breakpoint``) and the cache tokens the response
read and wrote (also on the ``chat`` span, and in the run's usage). Each response's share of
input read from the cache is recorded as ``hango.cache.read_ratio``. Adapters without prompt
caching drop the mark (the OpenAI-compatible one does; OpenAI caches prefixes on its own and
still reports the tokens read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from harness import telemetry
from harness.chain import ModelHandler, ModelRequest
from harness.context import SourcedBlock
from harness.deps import StackConfig
from harness.messages import CacheControl, Request, Response, TextBlock
from harness.providers.models import cache_minimum
from harness.state import State
from harness.tokens.base import ESTIMATE, Tokenizer

NAME = "prompt_cache"
WHY = ("skipped when a bare stack has no provider; marks the end of the stable system prefix "
       "for the provider's prompt cache, before todo and memory blocks so edits to them keep "
       "the cached prefix")
DYNAMIC_PARTS = ("system:filesystem", "system:todo")
DYNAMIC_PREFIXES = ("system:memory:",)
_MARK = CacheControl()


@dataclass(kw_only=True)
class PromptCacheReport:
    breakpoint: int | None = None  # index of the marked system block (None: nothing marked)
    part: str | None = None  # its part id
    # The stable prefix's tokens and the model's minimum, when a minimum is known: a prefix
    # below it is not marked (breakpoint None).
    prefix_tokens: int | None = None
    minimum: int | None = None
    cache_read_tokens: int = 0  # what the response says it read from the cache and wrote to it
    cache_write_tokens: int = 0


def report(state: State) -> PromptCacheReport | None:
    """What the middleware did to the request assembled last in this batch."""
    value = state.scratch.get(NAME)
    return value if isinstance(value, PromptCacheReport) else None


def is_dynamic(part: str) -> bool:
    return part in DYNAMIC_PARTS or part.startswith(DYNAMIC_PREFIXES)


def breakpoint_index(system: Sequence[SourcedBlock]) -> int | None:
    """The index of the last block of the stable prefix; None when there is none."""
    for index, block in enumerate(system):
        if is_dynamic(block.part):
            return index - 1 if index > 0 else None
    return len(system) - 1 if system else None


def prefix_tokens(req: ModelRequest, index: int, tokenizer: Tokenizer) -> int:
    """The tokens of the prefix a mark at system block ``index`` caches: the tools and the
    system blocks up to it, with the framing the provider adds around them."""
    return tokenizer.request(Request(
        model=req.request.model, system=tuple(sb.block for sb in req.system[:index + 1]),
        tools=tuple(t.definition for t in req.tools)))


class PromptCacheMiddleware:
    name = NAME

    def __init__(self, *, minimum: int | None = None, tokenizer: Tokenizer = ESTIMATE) -> None:
        self.minimum, self.tokenizer = minimum, tokenizer

    def wrap_model_call(self, req: ModelRequest, next: ModelHandler) -> Response:
        index = breakpoint_index(req.system)
        st = PromptCacheReport(breakpoint=index, minimum=self.minimum)
        if index is not None and self.minimum is not None:
            st.prefix_tokens = prefix_tokens(req, index, self.tokenizer)
            if st.prefix_tokens < self.minimum:  # the provider would cache none of it
                index = st.breakpoint = None
        st.part = None if index is None else req.system[index].part
        req.state.scratch[NAME] = st
        if index is not None:
            marked = req.system[index]
            system = list(req.system)
            system[index] = SourcedBlock(part=marked.part, block=TextBlock(
                text=marked.block.text, cache_control=_MARK))
            req = replace(req, system=tuple(system))
            telemetry.set_attributes({telemetry.ATTR_CACHE_BREAKPOINT: index})
        response = next(req)
        usage = response.usage
        st.cache_read_tokens = usage.cache_read_tokens
        st.cache_write_tokens = usage.cache_write_tokens
        total = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if total:
            telemetry.cache_read_ratio.record(usage.cache_read_tokens / total)
        return response


def from_config(cfg: StackConfig) -> PromptCacheMiddleware | None:
    if cfg.deps.provider is None and not cfg.capture_only:
        return None
    return PromptCacheMiddleware(minimum=cache_minimum(cfg.agent.model),
                                 tokenizer=cfg.deps.tokenizer)
