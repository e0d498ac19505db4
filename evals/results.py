"""An eval run's totals and the comparison of two: pure functions of case results."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from accounts.usage import money
from evals.models import CaseStatus, EvalCaseResult


def _costs(results: Iterable[EvalCaseResult]) -> dict[str, Decimal]:
    """The cases' cost summed per currency (amounts in two currencies are never added)."""
    sums: dict[str, Decimal] = {}
    for result in results:
        for line in (result.cost or {}).get("by_currency", []):
            sums[line["currency"]] = sums.get(line["currency"], Decimal(0)) + Decimal(line["total"])
    return sums


def summary(results: Sequence[EvalCaseResult]) -> dict[str, Any]:
    """Counts by status, the pass rate of the cases graded or errored (running and cancelled
    cases are not counted in it), and the totals."""
    counts = {status.value: 0 for status in CaseStatus}
    for result in results:
        counts[result.status] += 1
    decided = counts["passed"] + counts["failed"] + counts["error"]
    latencies = [r.latency_ms for r in results if r.latency_ms is not None]
    return {
        "cases": len(results), **counts,
        "pass_rate": round(counts["passed"] / decided, 4) if decided else None,
        "input_tokens": sum(r.input_tokens for r in results),
        "output_tokens": sum(r.output_tokens for r in results),
        "cost": {currency: money(total) for currency, total in sorted(_costs(results).items())},
        "unpriced_calls": sum((r.cost or {}).get("unpriced_calls", 0) for r in results),
        "latency_ms": {"total": sum(latencies), "max": max(latencies, default=None)},
    }


def _key(result: EvalCaseResult) -> str:
    return str(result.case_id) if result.case_id else f"name:{result.case_name}"


def compare(base: Sequence[EvalCaseResult], head: Sequence[EvalCaseResult]) -> dict[str, Any]:
    """``head`` against ``base``: the cases that passed in ``base`` and do not in ``head``
    (regressed), the reverse (fixed), the cases only one has, and the deltas of the pass rate,
    tokens, cost (per currency) and latency."""
    before = {_key(r): r for r in base}
    after = {_key(r): r for r in head}
    both = [k for k in after if k in before]

    def names(keys: Iterable[str]) -> list[dict[str, Any]]:
        return [{"case": after[k].case_id, "name": after[k].case_name,
                 "base": before[k].status, "head": after[k].status} for k in keys]

    a, b = summary(base), summary(head)
    cost_a, cost_b = _costs(base), _costs(head)
    return {
        "regressed": names(k for k in both if before[k].passed and not after[k].passed),
        "fixed": names(k for k in both if not before[k].passed and after[k].passed),
        "only_in_base": [before[k].case_name for k in before if k not in after],
        "only_in_head": [after[k].case_name for k in after if k not in before],
        "pass_rate": {"base": a["pass_rate"], "head": b["pass_rate"],
                      "delta": (round(b["pass_rate"] - a["pass_rate"], 4)
                                if None not in (a["pass_rate"], b["pass_rate"]) else None)},
        "tokens": {"base": a["input_tokens"] + a["output_tokens"],
                   "head": b["input_tokens"] + b["output_tokens"],
                   "delta": (b["input_tokens"] + b["output_tokens"]
                             - a["input_tokens"] - a["output_tokens"])},
        "cost": {c: {"base": money(cost_a.get(c, Decimal(0))),
                     "head": money(cost_b.get(c, Decimal(0))),
                     "delta": money(cost_b.get(c, Decimal(0)) - cost_a.get(c, Decimal(0)))}
                 for c in sorted({*cost_a, *cost_b})},
        "latency_ms": {"base": a["latency_ms"]["total"], "head": b["latency_ms"]["total"],
                       "delta": b["latency_ms"]["total"] - a["latency_ms"]["total"]},
    }
