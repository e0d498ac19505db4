"""An in-memory OpenTelemetry span exporter for tests.

The global TracerProvider can be set only once per process, so the provider is installed on the
first call and the same exporter is returned afterwards. Tracers obtained before that (such as
``harness.telemetry.tracer``, created at import) are proxies that delegate to the provider once
it is set.
"""

from __future__ import annotations

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_exporter: InMemorySpanExporter | None = None
_reader: InMemoryMetricReader | None = None


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


def metric_reader() -> InMemoryMetricReader:
    """The process-wide in-memory metric reader, installing its MeterProvider on first use
    (meters obtained before, as at every instrument's import, delegate to it)."""
    global _reader
    if _reader is None:
        reader = InMemoryMetricReader()
        provider = MeterProvider(metric_readers=[reader])
        metrics.set_meter_provider(provider)
        if metrics.get_meter_provider() is not provider:
            raise RuntimeError("another MeterProvider was installed first; metrics cannot be read")
        _reader = reader
    return _reader


def metric_sum(name: str, **attributes: object) -> float:
    """What the metric ``name`` has counted (a counter's sum, a histogram's count) over its
    points whose attributes include ``attributes``."""
    data = metric_reader().get_metrics_data()
    total = 0.0
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    if attributes.items() <= dict(point.attributes or {}).items():
                        total += getattr(point, "count", None) or getattr(point, "value", 0)
    return total
