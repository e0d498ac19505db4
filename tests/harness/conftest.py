"""Fixtures for harness unit tests: no database, no Django, finished spans in memory."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.otel import span_exporter


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """The in-memory exporter, emptied before the test; read it with ``get_finished_spans()``."""
    exporter = span_exporter()
    exporter.clear()
    return exporter
