"""The comparison of two eval runs a member may see, as the API (``GET
/v1/eval-runs/{base}/compare/{head}``) and the admin's compare page show it: one path for both,
so they never disagree."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from accounts.models import Member
from evals import execution, results, selectors
from evals.models import EvalRun


@dataclass(frozen=True, kw_only=True)
class Comparison:
    base: EvalRun
    head: EvalRun
    # results.compare's answer: regressed and fixed cases, the cases only one has, the deltas.
    delta: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"base": str(self.base.pk), "head": str(self.head.pk), **self.delta}


def eval_runs_compare(*, member: Member, base_id: uuid.UUID | str,
                      head_id: uuid.UUID | str) -> Comparison:
    """``head`` against ``base`` (the baseline), each advanced first as a read of it is (a case
    whose grading was lost is graded); either not ``member``'s to see is NotFound."""
    base = selectors.eval_run_get(member=member, eval_run_id=base_id)
    head = selectors.eval_run_get(member=member, eval_run_id=head_id)
    base, head = execution.eval_run_refresh(base), execution.eval_run_refresh(head)
    return Comparison(base=base, head=head, delta=results.compare(
        selectors.results_of(base), selectors.results_of(head)))
