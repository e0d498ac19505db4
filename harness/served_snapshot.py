"""The context inspector's counts from the model's own server (``?counted=provider`` for a team's
OpenAI-compatible server: :mod:`harness.providers.served_count` finds its endpoints).

Each part is counted with the server's tokenizer, through the same per-part rules as the
family's tokenizer (:class:`ServedTokenizer` in its place: the same functions build the parts).
Where the server applies its chat template on request (vLLM, the llama.cpp server), the totals
are its count of the request as the adapter sends it (``map_request``: the same messages and
tools as the call), and the templated prompt tells which parts the template dropped: a system
block whose text is not in it, a tool whose name is not, a message whose text is not. Such a
part is flagged ``dropped_by_template`` and left out of the parts that sum to the total.
Where it applies none (llama-cpp-python) the totals are the parts plus the tokenizer's framing,
and nothing can be flagged. What could not be asked is said in :class:`CountReport`'s
``fallback``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from harness import context
from harness.chain import ModelRequest
from harness.history import is_summary
from harness.messages import Message, Request, TextBlock
from harness.providers import openai_wire
from harness.providers.openai_chat import map_request
from harness.providers.served_count import ServerCounter, ServerCountError
from harness.snapshot_parts import Part
from harness.tokens.base import ContentCounts, Counted, Tokenizer
from harness.tokens.counts import EncodingCounts

# Texts one inspection may ask the server to count (the rest were counted before): past it the
# parts are the tokenizer's, and the snapshot says so.
MAX_ASKS = 500
ASK_SECONDS = 10.0  # and for at most this long: a slow server leaves the rest to the tokenizer
_REMEMBERED = 16_384  # texts' counts kept per server, the least recently used dropped first
NEEDLE_CHARS = 48  # how much of a part's text is looked for in the templated prompt

Groups = tuple[tuple[Part, ...], tuple[Part, ...], tuple[Part, ...]]  # system, tools, messages


@dataclass(frozen=True, kw_only=True)
class CountReport:
    """How ``?counted=provider`` was answered."""

    # Who counted the totals: a server's endpoints (``vllm``, ``llama.cpp``,
    # ``llama-cpp-python``) or the provider's count endpoint (``provider``); None: no one.
    counter: Counted | None
    endpoints: tuple[str, ...] = ()  # the server's endpoints asked
    template_checked: bool = False  # the templated prompt was seen: dropped parts are flagged
    fallback: str | None = None  # what was not counted as asked, and what counted it instead


class Served(NamedTuple):
    groups: Groups
    total_after: int | None  # None: not templated by the server (parts + framing)
    total_before: int | None
    report: CountReport


def served_counts(server: ServerCounter, tokenizer: Tokenizer,
                  build: Callable[[Tokenizer], Groups], *, after: ModelRequest,
                  before: ModelRequest) -> Served:
    """The parts ``build`` makes, counted by ``server``, and its totals of the requests sent
    without (``before``) and with the overrides (``after``) where it templates them."""
    counting = ServedTokenizer(server, tokenizer)
    served: ServedTokenizer | None = counting
    notes = []
    try:
        groups = build(counting)
    except ServerCountError as exc:
        groups, served = build(tokenizer), None
        notes.append(f"the parts were counted {by_tokenizer(tokenizer)}: the server's {exc}")
    framed = f"the totals are the parts plus the framing counted {by_tokenizer(tokenizer)}"
    if not server.templates:
        notes.append(f"{server.dialect} applies no chat template on request: {framed}, and "
                     "what its template drops is not known")
        return _untemplated(server, served, groups, before=before, after=after, notes=notes)
    try:
        templated = server.prompt(map_request(after.to_provider_request()))
        total_before = templated.tokens if before is after else server.prompt(
            map_request(before.to_provider_request())).tokens
    except ServerCountError as exc:
        notes.append(f"{framed}: the server's {exc}")
        return _untemplated(server, served, groups, before=before, after=after, notes=notes)
    dropped = dropped_parts(templated.prompt, after)

    def marked(group: tuple[Part, ...]) -> tuple[Part, ...]:
        return tuple(p._replace(dropped_by_template=p.id in dropped) if p.included else p
                     for p in group)

    return Served((marked(groups[0]), marked(groups[1]), marked(groups[2])), templated.tokens,
                  total_before, CountReport(
                      counter=server.dialect, endpoints=server.endpoints,
                      template_checked=True, fallback="; ".join(notes) or None))


def _untemplated(server: ServerCounter, served: ServedTokenizer | None, groups: Groups, *,
                 before: ModelRequest, after: ModelRequest, notes: list[str]) -> Served:
    """No templated total: the caller adds the tokenizer's framing to the parts; the request
    without the overrides counted the same way, by the server's text endpoint if it can."""
    total_before = None
    if served is not None and before is not after:
        try:
            total_before = served.request(before.to_provider_request())
        except ServerCountError as exc:
            notes.append(f"the request without the overrides was counted "
                         f"{by_tokenizer(served.framing_tokenizer)}: the server's {exc}")
    return Served(groups, None, total_before, CountReport(
        counter=None if served is None else server.dialect, endpoints=server.endpoints,
        fallback="; ".join(notes)))


def by_tokenizer(tokenizer: Tokenizer) -> str:
    """How ``tokenizer`` counts, as a fallback note says it."""
    return "by the estimate" if tokenizer.source == "estimate" else (
        f"with the {tokenizer.name} tokenizer")


# -- what the template dropped -------------------------------------------------------------------


def dropped_parts(prompt: str, request: ModelRequest) -> frozenset[str]:
    """The parts of ``request`` the templated ``prompt`` lacks: a system block's text, a tool's
    name or description, a message's text (or, with none, its calls' names or its results'
    content). The start of each is looked for, whitespace folded, as it is or as JSON escapes
    it."""
    folded = " ".join(prompt.split())
    needles = [(sourced.part, sourced.block.text) for sourced in request.system]
    # A tool's name may be in the prompt for another reason (a call in the history): its
    # description must be there too.
    needles += [(context.tool_part(tool.name), tool.name) for tool in request.tools]
    needles += [(context.tool_part(tool.name), tool.description) for tool in request.tools]
    needles += [(part, _message_needle(m)) for m in request.request.messages
                if (part := _message_id(m)) is not None]
    return frozenset(part for part, needle in needles if not _found(needle, folded))


def _message_id(message: Message) -> str | None:
    if is_summary(message):
        return context.SUMMARY
    return None if message.seq is None else context.message_part(message.seq)


def _message_needle(message: Message) -> str:
    text = " ".join(b.text for b in message.content if isinstance(b, TextBlock))
    if text.strip():
        return text
    return " ".join([b.name for b in message.tool_uses]
                    + [openai_wire.tool_result_content(b) for b in message.tool_results])


def _found(needle: str, folded: str) -> bool:
    start = " ".join(needle.split())[:NEEDLE_CHARS].strip()
    # As it is, or as a template's JSON filter writes it (non-ASCII escaped or not).
    return not start or any(form in folded for form in (
        start, json.dumps(start)[1:-1], json.dumps(start, ensure_ascii=False)[1:-1]))


# -- counting with the server's tokenizer --------------------------------------------------------


class ServedTokenizer(ContentCounts):
    """A :class:`~harness.tokens.base.Tokenizer` whose content counts are the server's (each
    text asked once: remembered per server, up to :data:`MAX_ASKS` new ones per instance) and
    whose framing is ``framing``'s, the family's estimate of what the wire adds."""

    def __init__(self, server: ServerCounter, framing: Tokenizer) -> None:
        self.server, self.framing_tokenizer = server, framing
        self.name = framing.name
        self.source: Counted = server.dialect
        self.tool_source: Counted = server.dialect
        self.framing_source: Counted = framing.framing_source
        self._asks, self._started = 0, 0.0
        self._content = EncodingCounts(self._count, result_content=openai_wire.tool_result_content,
                                       image=openai_wire.image_tokens)

    def _count(self, text: str) -> int:
        remembered = _remembered(self.server)
        hit = remembered.get(text)
        if hit is not None:
            return hit
        if self._asks >= MAX_ASKS:
            raise ServerCountError(f"text endpoint was asked {MAX_ASKS} texts, the most one "
                                   "inspection asks", provider="openai")
        if self._asks == 0:
            self._started = time.monotonic()
        elif time.monotonic() - self._started > ASK_SECONDS:
            raise ServerCountError(f"text endpoint took over {ASK_SECONDS:g} s for "
                                   f"{self._asks} texts", provider="openai")
        self._asks += 1
        count = self.server.text(text)
        remembered.put(text, count)
        return count

    def message_framing(self, message: Message) -> int:
        return self.framing_tokenizer.message_framing(message)

    def framing(self, request: Request) -> int:
        return self.framing_tokenizer.framing(request)

    @property
    def counts_key(self) -> str | None:
        return None  # never stored: a server's count is not the family tokenizer's

    def remember(self, message: Message, tokens: int) -> None:
        pass


class _Remembered:
    """One server's counts by text (a long text by its digest), the least recently used
    dropped first; locked, as a web process inspects on several threads."""

    def __init__(self) -> None:
        self._counts: OrderedDict[str | bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> int | None:
        key = _key(text)
        with self._lock:
            hit = self._counts.get(key)
            if hit is not None:
                self._counts.move_to_end(key)
            return hit

    def put(self, text: str, count: int) -> None:
        with self._lock:
            self._counts[_key(text)] = count
            if len(self._counts) > _REMEMBERED:
                self._counts.popitem(last=False)


def _key(text: str) -> str | bytes:
    return text if len(text) <= 256 else hashlib.blake2b(
        text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_servers: dict[tuple[str, str, str], _Remembered] = {}
_servers_lock = threading.Lock()


def _remembered(server: ServerCounter) -> _Remembered:
    key = (server.root, server.dialect, server.model)
    with _servers_lock:
        return _servers.setdefault(key, _Remembered())


def forget() -> None:
    """Drop every remembered count (tests)."""
    with _servers_lock:
        _servers.clear()
