"""Explicit input and output shapes of the eval suites, cases and runs APIs."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.serializers import MemoryContentField
from evals.grader_specs import SCHEMA as GRADERS_SCHEMA
from evals.grader_specs import GraderProblems, parse_graders
from evals.models import EvalCase, EvalCaseResult, EvalRun, EvalSuite
from evals.results import summary
from evals.services import MAX_TURNS
from hango_api import fields as strict
from hango_api.inputs import Input
from hango_api.schema import published
from hango_project.config import hango
from harness.middleware.memory import path_problem

MAX_FILES = 50
MAX_OVERRIDES = 200


@extend_schema_field(published(GRADERS_SCHEMA, "The case's graders, all of which must pass: on "
                               "the answer (exact, contains, regex, json_schema), on the "
                               "trajectory (tool_called, no_tool_called, max_turns, max_tokens, "
                               "max_cost) and a model judge with a rubric (judge)."))
class GradersField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        try:
            parse_graders(data)
        except GraderProblems as exc:
            raise serializers.ValidationError(exc.problems) from None
        return data


class EvalSuiteInput(Input):
    name = strict.CharField(max_length=100)
    description = strict.CharField(allow_blank=True, required=False, max_length=10_000)


class EvalSuiteOutput(serializers.ModelSerializer):
    owner = serializers.UUIDField(source="owner_id", read_only=True)
    case_count = serializers.IntegerField(read_only=True, help_text="How many cases it has.")

    class Meta:
        model = EvalSuite
        fields = ["id", "name", "description", "owner", "case_count", "created_at",
                  "updated_at"]
        read_only_fields = fields


class SetupInput(Input):
    files = strict.DictField(
        child=strict.CharField(allow_blank=True, trim_whitespace=False, max_length=1_000_000),
        required=False, help_text='The session\'s files before the first turn: {"/path": text}.')

    memory = strict.DictField(
        child=MemoryContentField(), required=False,
        help_text='The memory the case\'s runs read and write instead of the agent\'s: '
                  '{"/path": text}, as many files and bytes as an agent\'s memory holds; {} '
                  'for none. Left out, they read the agent\'s memory (and still never write '
                  'it).')

    def validate_files(self, value: dict[str, str]) -> dict[str, str]:
        return _paths_checked(value, MAX_FILES)

    def validate_memory(self, value: dict[str, str]) -> dict[str, str]:
        return _paths_checked(value, hango().memory_max_files)


def _paths_checked(value: dict[str, str], most: int) -> dict[str, str]:
    if len(value) > most:
        raise serializers.ValidationError(f"At most {most} files.")
    problems = [f"{path!r}: {problem}" for path in value if (problem := path_problem(path))]
    if problems:
        raise serializers.ValidationError(problems)
    return value


class EvalCaseInput(Input):
    name = strict.CharField(max_length=200)
    turns = strict.ListField(
        child=strict.CharField(trim_whitespace=False, max_length=200_000), min_length=1,
        max_length=MAX_TURNS, help_text="The user messages, each sent when the run answering "
                                        "the one before it has completed.")
    setup = SetupInput(required=False)
    graders = GradersField(required=False)

    def validate_turns(self, value: list[str]) -> list[str]:
        if any(not turn.strip() for turn in value):
            raise serializers.ValidationError("A turn may not be empty.")
        return value


class EvalCaseOutput(serializers.ModelSerializer):
    suite = serializers.UUIDField(source="suite_id", read_only=True)
    graders = GradersField(read_only=True)

    class Meta:
        model = EvalCase
        fields = ["id", "suite", "name", "turns", "setup", "graders", "created_at"]
        read_only_fields = fields


class FromSessionInput(Input):
    session = strict.UUIDField(help_text="A session of yours: its user messages become turns.")
    name = strict.CharField(max_length=200, required=False,
                            help_text="The case's name; the session's title by default.")
    expect = strict.ChoiceField(choices=["contains", "exact", "none"], required=False,
                                help_text="The grader suggested from the session's final answer "
                                          "(default contains: its first line).")


class OverridesInput(Input):
    exclude = strict.ListField(child=strict.CharField(max_length=1_100), required=False,
                               max_length=MAX_OVERRIDES)
    replace = strict.DictField(child=strict.CharField(allow_blank=True, trim_whitespace=False),
                               required=False)


class EvalRunInput(Input):
    """``overrides``: context overrides applied on top of the stored ones in every case's
    session and never saved (the Context panel's selection), as a try takes them."""

    suite = strict.UUIDField()
    agent = strict.UUIDField()
    version = strict.IntegerField(min_value=1, required=False, allow_null=True,
                                  help_text="The agent's version to run; its latest when the "
                                            "eval run starts if left out.")
    overrides = OverridesInput(required=False)


class EvalCaseResultOutput(serializers.ModelSerializer):
    case = serializers.UUIDField(source="case_id", read_only=True, allow_null=True)
    session = serializers.UUIDField(source="session_id", read_only=True, allow_null=True)
    run = serializers.UUIDField(source="run_id", read_only=True, allow_null=True)
    run_url = serializers.SerializerMethodField()
    passed = serializers.BooleanField(read_only=True)

    class Meta:
        model = EvalCaseResult
        fields = ["id", "case", "case_name", "status", "passed", "verdicts", "turn",
                  "input_tokens", "output_tokens", "cost", "latency_ms", "session", "run",
                  "run_url", "created_at", "finished_at"]
        read_only_fields = fields

    def get_run_url(self, result: EvalCaseResult) -> str | None:
        return f"/v1/runs/{result.run_id}" if result.run_id else None


class EvalRunOutput(serializers.ModelSerializer):
    suite = serializers.UUIDField(source="suite_id", read_only=True)
    agent = serializers.UUIDField(source="agent_id", read_only=True)
    member = serializers.UUIDField(source="member_id", read_only=True)
    summary = serializers.SerializerMethodField()
    results = serializers.SerializerMethodField()

    class Meta:
        model = EvalRun
        fields = ["id", "suite", "agent", "version", "overrides", "status", "member", "summary",
                  "results", "created_at", "finished_at"]
        read_only_fields = fields

    def get_summary(self, eval_run: EvalRun) -> dict[str, Any]:
        return summary(self._results(eval_run))

    @extend_schema_field(EvalCaseResultOutput(many=True, allow_null=True))
    def get_results(self, eval_run: EvalRun) -> Any:
        """Each case's result (null in lists)."""
        if not self.context.get("with_results"):
            return None
        return EvalCaseResultOutput(self._results(eval_run), many=True).data

    def _results(self, eval_run: EvalRun) -> list[EvalCaseResult]:
        if eval_run.pk not in self._cache:
            self._cache[eval_run.pk] = list(eval_run.results.all())
        return self._cache[eval_run.pk]

    @property
    def _cache(self) -> dict[Any, list[EvalCaseResult]]:
        if not hasattr(self, "_results_cache"):
            self._results_cache: dict[Any, list[EvalCaseResult]] = {}
        return self._results_cache
