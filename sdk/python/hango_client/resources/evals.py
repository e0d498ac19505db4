"""Evals: suites of cases (the turns to send, the graders of the answers), and eval runs, which
send a suite's cases to an agent as ordinary runs and grade them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from hango_client._endpoint import OMIT, C, Omit, Ref, Resource, endpoint, items, ref_id
from hango_client._waits import polled
from hango_client.errors import EvalRunTimedOut
from hango_client.types import EvalCase, EvalOverrides, EvalRun, EvalSetup, EvalSuite, Page

JSON = dict[str, Any]
# Module-level names: inside a resource class, ``list`` is its list route.
Turns = list[str]
Graders = list[Mapping[str, Any]]
Expect = Literal["contains", "exact", "none"]


class EvalSuites(Resource[C]):
    @endpoint("GET", "/v1/eval-suites", query=("limit",))
    def list(self, *, limit: int | None = None) -> Page[EvalSuite]:
        """The suites, by name."""
    iter = items(list)

    @endpoint("POST", "/v1/eval-suites")
    def create(self, *, name: str, description: str | Omit = OMIT) -> EvalSuite:
        """A suite (its name unique in the tenant: a 409 otherwise)."""

    @endpoint("GET", "/v1/eval-suites/{suite_id}")
    def get(self, suite_id: Ref, /) -> EvalSuite: ...

    @endpoint("PATCH", "/v1/eval-suites/{suite_id}")
    def update(self, suite_id: Ref, /, *, name: str | Omit = OMIT,
               description: str | Omit = OMIT) -> EvalSuite: ...

    @endpoint("DELETE", "/v1/eval-suites/{suite_id}")
    def delete(self, suite_id: Ref, /) -> None:
        """Delete the suite, its cases and its eval runs (their sessions stay)."""


class EvalCases(Resource[C]):
    @endpoint("GET", "/v1/eval-suites/{suite_id}/cases", query=("limit",))
    def list(self, suite_id: Ref, /, *, limit: int | None = None) -> Page[EvalCase]:
        """The suite's cases, oldest first."""
    iter = items(list)

    @endpoint("POST", "/v1/eval-suites/{suite_id}/cases")
    def create(self, suite_id: Ref, /, *, name: str, turns: Turns,
               setup: EvalSetup | Omit = OMIT,
               graders: Graders | Omit = OMIT) -> EvalCase:
        """A case: ``turns``, the user messages (each sent when the run answering the one
        before it has completed); ``setup``, its session's ``files`` and ``memory``;
        ``graders``, all of which must pass (``{"type": "contains", "value": "…"}``, …)."""

    @endpoint("POST", "/v1/eval-suites/{suite_id}/cases/from-session")
    def from_session(self, suite_id: Ref, /, *, session: Ref, name: str | Omit = OMIT,
                     expect: Expect | Omit = OMIT) -> EvalCase:
        """A case replaying one of your sessions: its user messages become the turns, its final
        answer a suggested grader (``expect``: ``contains`` its first line, the default,
        ``exact``, or ``none``); named after the session's title unless ``name`` is given."""

    @endpoint("GET", "/v1/eval-suites/{suite_id}/cases/{case_id}")
    def get(self, suite_id: Ref, case_id: Ref, /) -> EvalCase: ...

    @endpoint("PATCH", "/v1/eval-suites/{suite_id}/cases/{case_id}")
    def update(self, suite_id: Ref, case_id: Ref, /, *, name: str | Omit = OMIT,
               turns: Turns | Omit = OMIT, setup: EvalSetup | Omit = OMIT,
               graders: Graders | Omit = OMIT) -> EvalCase: ...

    @endpoint("DELETE", "/v1/eval-suites/{suite_id}/cases/{case_id}")
    def delete(self, suite_id: Ref, case_id: Ref, /) -> None:
        """Delete the case; the eval runs' results of it stay (their ``case`` None)."""


def _still_running(eval_run: EvalRun) -> EvalRunTimedOut:
    return EvalRunTimedOut(f"eval run {ref_id(eval_run)} did not end in time "
                           f"({eval_run['summary']['running']} cases running)", run=eval_run)


class EvalRuns(Resource[C]):
    @endpoint("GET", "/v1/eval-runs", query=("suite", "agent", "limit"))
    def list(self, *, suite: Ref | None = None, agent: Ref | None = None,
             limit: int | None = None) -> Page[EvalRun]:
        """Eval runs, newest first (of one suite, one agent), each with its ``summary``; their
        ``results`` are None here (:meth:`get` has them)."""
    iter = items(list)

    @endpoint("POST", "/v1/eval-runs")
    def start(self, *, suite: Ref, agent: Ref, version: int | None | Omit = OMIT,
              overrides: EvalOverrides | Omit = OMIT) -> EvalRun:
        """Send every case of ``suite`` to ``agent`` (its ``version``, the latest at the start
        by default), each case an ordinary run in a session of its own, with ``overrides``
        applied and never saved; answers at once, ``running`` (:meth:`wait` follows it)."""

    @endpoint("GET", "/v1/eval-runs/{eval_run_id}")
    def get(self, eval_run_id: Ref, /) -> EvalRun:
        """The eval run with each case's result (reading it moves on a case whose run ended
        unnoticed)."""

    @endpoint("POST", "/v1/eval-runs/{eval_run_id}/cancel")
    def cancel(self, eval_run_id: Ref, /) -> EvalRun:
        """Cancel the eval run and the runs of its cases still running (409 once it ended)."""

    @endpoint("GET", "/v1/eval-runs/{eval_run_id}/compare/{other_id}")
    def compare(self, eval_run_id: Ref, other_id: Ref, /) -> JSON:
        """``other_id`` against ``eval_run_id`` (the baseline): ``regressed`` and ``fixed``
        cases, ``only_in_base``/``only_in_head``, and the ``pass_rate``, ``tokens``, ``cost``
        and ``latency_ms`` deltas."""

    @polled(get, done=lambda eval_run: eval_run["status"] != "running",
            timed_out=_still_running)
    def wait(self, eval_run_id: Ref, /, *, timeout: float | None = None,
             interval: float = 1.0) -> EvalRun:
        """The eval run once it is no longer ``running`` (``completed``: every case graded;
        or ``cancelled``), read every ``interval`` seconds; after ``timeout`` seconds,
        :class:`EvalRunTimedOut` (the eval run goes on)."""


class Evals(Resource[C]):
    """``suites``, their ``cases``, and eval ``runs``."""

    def __init__(self, core: C) -> None:
        super().__init__(core)
        self.suites = EvalSuites(core)
        self.cases = EvalCases(core)
        self.runs = EvalRuns(core)
