"""An in-memory OpenTelemetry span exporter for tests.

The global TracerProvider can be set only once per process, so the provider is installed on the
first call and the same exporter is returned afterwards. Tracers obtained before that (such as
``harness.telemetry.tracer``, created at import) are proxies that delegate to the provider once
it is set.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter: InMemorySpanExporter | None = None


def span_exporter() -> InMemorySpanExporter:
    """The process-wide in-memory exporter, installing its TracerProvider on first use."""
    global _exporter
    if _exporter is None:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            raise RuntimeError("another TracerProvider was installed first; spans cannot be read")
        _exporter = exporter
    return _exporter
