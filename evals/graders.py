"""The graders, as pure functions of what a case's runs did (:class:`Trajectory`): each returns
a :class:`Verdict` with a reason a person reads. The model judge is :mod:`evals.judge`'s."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, assert_never

import jsonschema

from evals.grader_specs import AnswerGrader, LimitGrader, ToolGrader

_SHOWN = 120  # characters of an answer or arguments quoted in a reason


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Trajectory:
    """What a case's runs did: the last run's answer, every tool call of every run in order,
    their turns, tokens (input and output) and cost by currency."""

    answer: str
    calls: tuple[ToolCall, ...] = ()
    turns: int = 0
    tokens: int = 0
    cost: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    grader: str
    passed: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"grader": self.grader, "passed": self.passed, "reason": self.reason}


def _shown(text: str) -> str:
    return json.dumps(text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…")


def grade_answer(grader: AnswerGrader, answer: str) -> Verdict:
    def verdict(passed: bool, reason: str) -> Verdict:
        return Verdict(grader=grader.type, passed=passed, reason=reason)

    fold = str.casefold if grader.ignore_case else str
    if grader.type == "exact":
        same = fold(answer.strip()) == fold(grader.value.strip())
        return verdict(same, "the answer is exactly the expected text" if same else
                       f"expected {_shown(grader.value)}, the answer is {_shown(answer)}")
    if grader.type == "contains":
        found = fold(grader.value) in fold(answer)
        return verdict(found, f"the answer contains {_shown(grader.value)}" if found else
                       f"the answer {_shown(answer)} does not contain {_shown(grader.value)}")
    if grader.type == "regex":
        match = re.search(grader.pattern, answer)
        return verdict(match is not None,
                       f"the answer matches at {_shown(match.group(0))}" if match else
                       f"the answer {_shown(answer)} does not match /{grader.pattern}/")
    return _grade_json(grader, answer)


def _fenced(answer: str) -> str:
    """The answer without a Markdown code fence around it (```json … ```)."""
    found = re.fullmatch(r"\s*```[a-zA-Z]*\n(.*?)\n?```\s*", answer, re.DOTALL)
    return found.group(1) if found else answer


def _grade_json(grader: AnswerGrader, answer: str) -> Verdict:
    try:
        document = json.loads(_fenced(answer))
    except json.JSONDecodeError as exc:
        return Verdict(grader="json_schema", passed=False,
                       reason=f"the answer is not JSON ({exc.msg} at {exc.pos})")
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(grader.schema or {}).iter_errors(document))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "the document"
        return Verdict(grader="json_schema", passed=False,
                       reason=f"the answer's JSON does not fit the schema at {where}: "
                              f"{error.message}")
    return Verdict(grader="json_schema", passed=True, reason="the answer's JSON fits the schema")


def _args_fit(grader: ToolGrader, call: ToolCall) -> str | None:
    """Why ``call``'s arguments do not fit the grader's schema or pattern; None when they do."""
    if grader.args_schema is not None:
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(grader.args_schema).iter_errors(dict(call.args)))
        if error is not None:
            return f"arguments do not fit the schema: {error.message}"
    if grader.args_pattern is not None:
        text = json.dumps(call.args, sort_keys=True, ensure_ascii=False)
        if re.search(grader.args_pattern, text) is None:
            return f"arguments {_shown(text)} do not match /{grader.args_pattern}/"
    return None


def grade_tools(grader: ToolGrader, calls: tuple[ToolCall, ...]) -> Verdict:
    names = sorted({c.name for c in calls})
    if grader.type == "no_tool_called":
        return Verdict(grader=grader.type, passed=not calls,
                       reason="no tool was called" if not calls else
                       f"{len(calls)} tool call(s) were made: {', '.join(names)}")
    label = f"tool_called {grader.tool}"
    made = [c for c in calls if c.name == grader.tool]
    if not made:
        return Verdict(grader=label, passed=False, reason=f"{grader.tool} was never called"
                       + (f" (called: {', '.join(names)})" if names else " (no tool was called)"))
    misfits = [problem for c in made if (problem := _args_fit(grader, c)) is not None]
    if len(misfits) == len(made):
        return Verdict(grader=label, passed=False,
                       reason=f"{grader.tool} was called {len(made)} time(s); {misfits[0]}")
    return Verdict(grader=label, passed=True,
                   reason=f"{grader.tool} was called {len(made)} time(s)"
                          + (" with fitting arguments" if misfits or grader.args_schema
                             or grader.args_pattern else ""))


def grade_limit(grader: LimitGrader, trajectory: Trajectory) -> Verdict:
    label = f"{grader.type} {grader.limit}" + (f" {grader.currency}" if grader.currency else "")
    match grader.type:
        case "max_turns":
            used, what = Decimal(trajectory.turns), "turns"
        case "max_tokens":
            used, what = Decimal(trajectory.tokens), "tokens"
        case "max_cost":
            if grader.currency not in trajectory.cost and trajectory.tokens:
                return Verdict(grader=label, passed=False,
                               reason=f"no cost in {grader.currency} is known for the runs "
                                      "(their calls have no price in it)")
            used, what = trajectory.cost.get(grader.currency, Decimal(0)), grader.currency
        case _:
            raise ValueError(f"not a limit grader: {grader.type}")
    passed = used <= grader.limit
    return Verdict(grader=label, passed=passed,
                   reason=f"{used} {what} {'within' if passed else 'over'} the limit of "
                          f"{grader.limit}")


def grade(grader: AnswerGrader | ToolGrader | LimitGrader, trajectory: Trajectory) -> Verdict:
    """Any grader but the judge."""
    match grader:
        case AnswerGrader():
            return grade_answer(grader, trajectory.answer)
        case ToolGrader():
            return grade_tools(grader, trajectory.calls)
        case LimitGrader():
            return grade_limit(grader, trajectory)
        case _:
            assert_never(grader)
