"""A case's graders: their JSON form validated once, at the edge, into frozen values.

Each grader is a JSON object with a ``type``; :data:`SCHEMA` is the JSON Schema of the list, and
:func:`parse_graders` turns a valid list into :data:`Grader` values (a 422 names every problem).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

_TEXT = {"type": "string", "maxLength": 100_000}
_COUNT = {"type": "integer", "minimum": 0}


def _obj(kind: str, required: dict[str, Any], optional: dict[str, Any] | None = None
         ) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False,
            "required": ["type", *required],
            "properties": {"type": {"const": kind}, **required, **(optional or {})}}


SCHEMA: dict[str, Any] = {"type": "array", "maxItems": 50, "items": {"oneOf": [
    _obj("exact", {"value": _TEXT}, {"ignore_case": {"type": "boolean"}}),
    _obj("contains", {"value": _TEXT}, {"ignore_case": {"type": "boolean"}}),
    _obj("regex", {"pattern": _TEXT}),
    _obj("json_schema", {"schema": {"type": "object"}}),
    _obj("tool_called", {"tool": {"type": "string", "minLength": 1, "maxLength": 200}},
         {"args_schema": {"type": "object"}, "args_pattern": _TEXT}),
    _obj("no_tool_called", {}),
    _obj("max_turns", {"value": _COUNT}),
    _obj("max_tokens", {"value": _COUNT}),
    _obj("max_cost", {"amount": {"type": "string", "pattern": r"^\d{1,12}(\.\d{1,12})?$"},
                      "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}),
    _obj("judge", {"rubric": {"type": "string", "minLength": 1, "maxLength": 20_000}},
         {"model": {"type": "string", "maxLength": 210}}),
]}}


@dataclass(frozen=True, kw_only=True)
class AnswerGrader:
    """On the last run's answer text: ``exact``, ``contains``, ``regex`` or ``json_schema``."""

    type: str
    value: str = ""
    ignore_case: bool = False
    pattern: str = ""
    schema: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ToolGrader:
    """On the runs' tool calls: ``tool_called`` (``tool`` None: ``no_tool_called``)."""

    type: str
    tool: str | None = None
    args_schema: dict[str, Any] | None = None
    args_pattern: str | None = None


@dataclass(frozen=True, kw_only=True)
class LimitGrader:
    """On the runs' totals: at most ``limit`` turns, tokens, or cost in ``currency``."""

    type: str
    limit: Decimal
    currency: str = ""


@dataclass(frozen=True, kw_only=True)
class JudgeGrader:
    """A model's verdict on the answer against ``rubric`` (``model`` None: the agent's)."""

    type: str
    rubric: str
    model: str | None = None


Grader = AnswerGrader | ToolGrader | LimitGrader | JudgeGrader


class GraderProblems(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _schema_problems(document: dict[str, Any]) -> list[str]:
    try:
        jsonschema.Draft202012Validator.check_schema(document)
    except SchemaError as exc:
        return [f"not a valid JSON Schema: {exc.message}"]
    return []


def _pattern_problems(pattern: str | None) -> list[str]:
    try:
        re.compile(pattern or "")
    except re.error as exc:
        return [f"not a valid regular expression: {exc}"]
    return []


def _one(raw: dict[str, Any]) -> tuple[Grader, list[str]]:
    kind = raw["type"]
    if kind in ("exact", "contains", "regex", "json_schema"):
        answer = AnswerGrader(type=kind, value=raw.get("value", ""),
                              ignore_case=raw.get("ignore_case", False),
                              pattern=raw.get("pattern", ""), schema=raw.get("schema"))
        problems = (_pattern_problems(answer.pattern) if kind == "regex" else
                    _schema_problems(raw["schema"]) if kind == "json_schema" else [])
        return answer, problems
    if kind in ("tool_called", "no_tool_called"):
        tool = ToolGrader(type=kind, tool=raw.get("tool"), args_schema=raw.get("args_schema"),
                          args_pattern=raw.get("args_pattern"))
        problems = _pattern_problems(tool.args_pattern)
        if tool.args_schema is not None:
            problems += _schema_problems(tool.args_schema)
        return tool, problems
    if kind == "judge":
        return JudgeGrader(type=kind, rubric=raw["rubric"], model=raw.get("model")), []
    try:
        limit = Decimal(str(raw["amount"] if kind == "max_cost" else raw["value"]))
    except InvalidOperation:  # the schema's pattern makes this unreachable
        return LimitGrader(type=kind, limit=Decimal(0)), ["not a number"]
    return LimitGrader(type=kind, limit=limit, currency=raw.get("currency", "")), []


def parse_graders(raw: Any) -> list[Grader]:
    """The graders of ``raw`` (a case's ``graders`` as sent), or :class:`GraderProblems`, each
    problem ``"<place>: <message>"`` (``0/value``: the first grader's value)."""
    if not isinstance(raw, list):
        raise GraderProblems(["Expected a list of grader objects, not a " + type(raw).__name__])
    problems = _shape_problems(raw)
    if problems:
        raise GraderProblems(problems)
    graders: list[Grader] = []
    for i, item in enumerate(raw):
        grader, found = _one(item)
        graders.append(grader)
        problems += [f"{i}: {p}" for p in found]
    if problems:
        raise GraderProblems(problems)
    return graders


def _shape_problems(raw: list[Any]) -> list[str]:
    """Each grader checked against its own type's schema, so a problem names its place."""
    if len(raw) > SCHEMA["maxItems"]:
        return [f"At most {SCHEMA['maxItems']} graders."]
    problems = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            problems.append(f"{i}: Expected a grader object, not a {type(item).__name__}.")
        elif item.get("type") not in _BRANCHES:
            problems.append(f"{i}/type: Unknown grader type {item.get('type')!r}; one of "
                            f"{sorted(_BRANCHES)}.")
        else:
            branch = _BRANCHES[item["type"]]
            problems += [f"{i}/{key}: Unknown field." for key in item
                         if key not in branch["properties"]]
            errors = [e for e in jsonschema.Draft202012Validator(branch).iter_errors(item)
                      if not (e.validator == "additionalProperties" and not e.absolute_path)]
            problems += [f"{'/'.join(str(p) for p in (i, *e.absolute_path))}: {e.message}"
                         for e in sorted(errors, key=lambda e: list(e.absolute_path))]
    return problems


_BRANCHES = {item["properties"]["type"]["const"]: item for item in SCHEMA["items"]["oneOf"]}
