"""Each grader passes what it should and fails what it should, saying why; no database."""

from __future__ import annotations

from decimal import Decimal

import pytest

from evals.grader_specs import GraderProblems, parse_graders
from evals.graders import ToolCall, Trajectory, grade

ANSWER = 'The total is 42. {"ignored": true}'
SEEN = Trajectory(answer=ANSWER, calls=(ToolCall(name="echo", args={"text": "hi there"}),
                                        ToolCall(name="word_count", args={"text": "a b"})),
                  turns=3, tokens=1_200, cost={"USD": Decimal("0.004")})


def verdict(grader: dict, seen: Trajectory = SEEN):
    (parsed,) = parse_graders([grader])
    return grade(parsed, seen)  # type: ignore[arg-type]


@pytest.mark.parametrize(("passing", "failing"), [
    ({"type": "exact", "value": "the total is 42. {\"ignored\": true}", "ignore_case": True},
     {"type": "exact", "value": "The total is 42."}),
    ({"type": "contains", "value": "total is 42"}, {"type": "contains", "value": "43"}),
    ({"type": "contains", "value": "TOTAL", "ignore_case": True},
     {"type": "contains", "value": "TOTAL"}),
    ({"type": "regex", "pattern": r"\b42\b"}, {"type": "regex", "pattern": r"^\d+$"}),
    ({"type": "tool_called", "tool": "echo"}, {"type": "tool_called", "tool": "read_file"}),
    ({"type": "tool_called", "tool": "echo",
      "args_schema": {"type": "object", "properties": {"text": {"pattern": "^hi"}}}},
     {"type": "tool_called", "tool": "echo",
      "args_schema": {"type": "object", "required": ["count"]}}),
    ({"type": "tool_called", "tool": "word_count", "args_pattern": '"text": "a b"'},
     {"type": "tool_called", "tool": "word_count", "args_pattern": "zzz"}),
    ({"type": "max_turns", "value": 3}, {"type": "max_turns", "value": 2}),
    ({"type": "max_tokens", "value": 1_200}, {"type": "max_tokens", "value": 1_000}),
    ({"type": "max_cost", "amount": "0.01", "currency": "USD"},
     {"type": "max_cost", "amount": "0.001", "currency": "USD"}),
])
def test_a_grader_passes_and_fails(passing, failing):
    ok, bad = verdict(passing), verdict(failing)
    assert ok.passed, ok
    assert not bad.passed, bad
    assert bad.reason and ok.reason


def test_no_tool_called_and_json_schema():
    assert not verdict({"type": "no_tool_called"}).passed
    assert verdict({"type": "no_tool_called"}, Trajectory(answer="x")).passed
    schema = {"type": "object", "required": ["total"],
              "properties": {"total": {"type": "integer"}}}
    fenced = Trajectory(answer='```json\n{"total": 42}\n```')
    assert verdict({"type": "json_schema", "schema": schema}, fenced).passed
    wrong = verdict({"type": "json_schema", "schema": schema},
                    Trajectory(answer='{"total": "42"}'))
    assert not wrong.passed and "total" in wrong.reason
    prose = verdict({"type": "json_schema", "schema": schema}, Trajectory(answer=ANSWER))
    assert not prose.passed and "not JSON" in prose.reason


def test_a_cost_in_another_currency_is_not_a_pass():
    result = verdict({"type": "max_cost", "amount": "1", "currency": "EUR"})
    assert not result.passed and "EUR" in result.reason


@pytest.mark.parametrize(("raw", "problem"), [
    ("contains", "Expected a list"),
    ([{"type": "smell"}], "0/type: Unknown grader type"),
    ([{"type": "regex", "pattern": "("}], "0: not a valid regular expression"),
    ([{"type": "json_schema", "schema": {"type": "nonsense"}}], "not a valid JSON Schema"),
    ([{"type": "contains", "value": 5}], "0/value: 5 is not of type 'string'"),
    ([{"type": "max_cost", "amount": "1e3", "currency": "USD"}], "0/amount"),
    ([{"type": "no_tool_called", "tool": "x"}], "0/tool: Unknown field."),
])
def test_invalid_graders_are_refused_naming_the_place(raw, problem):
    with pytest.raises(GraderProblems) as caught:
        parse_graders(raw)
    assert any(problem in p for p in caught.value.problems), caught.value.problems
