"""Answer serializers whose fields are mapped once per class: each instance still binds fields
of its own, and answers what DRF's own mapping answers."""

from __future__ import annotations

from rest_framework import serializers

from runs.api.serializers import RunOutput
from runs.models import Run


class _Mapped(serializers.ModelSerializer):
    """The same fields as :class:`RunOutput`'s mapped ones, mapped by DRF for every instance."""

    class Meta:
        model = Run
        fields = ["id", "agent_version", "status", "turn", "cancel_requested", "created_at",
                  "started_at", "finished_at"]


def test_each_instance_binds_fields_of_its_own(queued_run):
    a, b = RunOutput(queued_run), RunOutput(queued_run)
    assert a.data == b.data
    for name, field in a.fields.items():
        assert field is not b.fields[name]
        assert (field.parent, b.fields[name].parent) == (a, b)
        assert getattr(RunOutput._built_fields[name], "parent", None) is None  # never bound
    assert a.fields["usage"].fields["input_tokens"] is not b.fields["usage"].fields["input_tokens"]


def test_the_mapped_fields_answer_what_drf_s_own_mapping_answers(queued_run):
    data = RunOutput(queued_run).data
    assert {k: data[k] for k in _Mapped.Meta.fields} == _Mapped(queued_run).data
