"""A context snapshot's totals when ``?counted=provider`` asks for them: the model's own
server's (:mod:`harness.served_snapshot`), else the provider's count endpoint's, else the
tokenizer's — and, in :class:`~harness.served_snapshot.CountReport`, what was asked and how it
was answered, so a fallback is said in the snapshot, not only by its ``counted``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from harness.errors import ProviderError
from harness.messages import Request
from harness.providers.base import TokenCounter
from harness.providers.served_count import ServerCounter
from harness.served_snapshot import CountReport, Served, by_tokenizer
from harness.tokens.base import Counted, Tokenizer


def snapshot_totals(parts_after: int, sent: Request, unfiltered: Request, tokenizer: Tokenizer,
                    *, same: bool, served: Served | None, counter: object,
                    server: ServerCounter | Literal["none"] | None) -> Totals:
    """The totals of ``sent`` (its included parts' tokens ``parts_after``) and of
    ``unfiltered`` (``same``: the one request): the model server's (``served``), else the
    provider ``counter``'s when one is given, else the tokenizer's."""
    # The tokenizer's request() is its parts plus its framing: summed from the parts already
    # counted, so a 10,000-message history is not counted over again.
    after = parts_after + tokenizer.framing(sent)
    totals = Totals(after, after if same else tokenizer.request(unfiltered), tokenizer.source,
                    tokenizer.framing_source)
    if served is not None:
        return _served_totals(served, totals)
    if counter is not None:
        return _provider_totals(counter, sent, unfiltered, totals, tokenizer, same=same,
                               server=server)
    return totals


class Totals(NamedTuple):
    after: int
    before: int
    counted: Counted
    framing_counted: Counted
    report: CountReport | None = None  # how ``?counted=provider`` was answered


def _served_totals(served: Served, totals: Totals) -> Totals:
    """The server's totals where it templated the requests; else its parts' (the parts in
    ``totals`` are the server's already) with the tokenizer's framing."""
    report = served.report
    if served.total_after is not None and report.counter is not None:
        before = served.total_after if served.total_before is None else served.total_before
        return Totals(served.total_after, before, report.counter, report.counter, report)
    if report.counter is not None:  # the parts counted by the server, not templated
        return totals._replace(counted=report.counter, report=report,
                               before=totals.before if served.total_before is None
                               else served.total_before)
    return totals._replace(report=report)


NO_ENDPOINT = ("the model's server has none of the count endpoints hango knows (vLLM's "
               "/tokenize, the llama.cpp server's /apply-template, llama-cpp-python's "
               "/extras/tokenize/count)")


def _provider_totals(counter: object, sent: Request, unfiltered: Request, totals: Totals,
                     tokenizer: Tokenizer, *, same: bool,
                     server: ServerCounter | Literal["none"] | None) -> Totals:
    """The provider's count endpoint's totals; what it could not count said in the report."""
    by = f"counted {by_tokenizer(tokenizer)}"
    where = f"{NO_ENDPOINT}, and " if server == "none" else ""
    if not isinstance(counter, TokenCounter):
        return totals._replace(report=CountReport(
            counter=None, fallback=f"{where}the provider has no token count endpoint: {by}"))
    try:
        after = counter.count_tokens(sent)
        before = after if same else counter.count_tokens(unfiltered)
    except ProviderError as exc:  # advisory: an unreachable counter leaves the tokenizer's
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        return totals._replace(report=CountReport(
            counter=None, fallback=f"{where}the provider's count endpoint failed ({reason}): "
                                   f"{by}"))
    return Totals(after, before, "provider", "provider", CountReport(counter="provider"))
