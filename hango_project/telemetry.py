"""OpenTelemetry wiring: the SDK from the standard ``OTEL_*`` environment, plus the Django and
Celery instrumentations. Span names and attributes themselves live in ``harness/telemetry.py``.

Nothing is exported unless the environment asks for it (``OTEL_TRACES_EXPORTER`` or
``OTEL_EXPORTER_OTLP_ENDPOINT``); without it the API's no-op provider stays in place, so a test
(or another host process) can install its own provider.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

from opentelemetry import metrics, trace

log = logging.getLogger(__name__)
_lock = threading.Lock()
_configured = False
_celery_instrumented = False


def _exporter_names(kind: str) -> list[str]:
    """Exporters named by OTEL_<KIND>_EXPORTER; "otlp" when only an OTLP endpoint is given."""
    raw = os.environ.get(f"OTEL_{kind}_EXPORTER", "").strip()
    if not raw and os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        raw = "otlp"
    return [n.strip() for n in raw.split(",") if n.strip() and n.strip() != "none"]


def _configure_sdk() -> None:
    from opentelemetry.sdk.resources import Resource

    # One instance per process: the metrics of each worker (its runs in flight) stay apart.
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "hango"),
                                "service.instance.id": f"{socket.gethostname()}:{os.getpid()}"})
    span_exporters = _exporter_names("TRACES")
    if span_exporters:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

        provider = TracerProvider(resource=resource)
        for name in span_exporters:
            if name == "otlp":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )

                provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            elif name == "console":
                provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
            else:
                log.warning("unsupported OTEL_TRACES_EXPORTER %r ignored", name)
        trace.set_tracer_provider(provider)
    metric_exporters = _exporter_names("METRICS")
    if "otlp" in metric_exporters:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        reader = PeriodicExportingMetricReader(OTLPMetricExporter())
        metrics.set_meter_provider(MeterProvider(resource=resource, metric_readers=[reader]))


def configure() -> None:
    """Once per process: the SDK (when asked for) and the Django instrumentation."""
    global _configured
    with _lock:
        if _configured or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
            return
        _configured = True
        _configure_sdk()
        from opentelemetry.instrumentation.django import DjangoInstrumentor

        # Request headers (Authorization) are never captured: no header capture is configured.
        DjangoInstrumentor().instrument()
    # The sending side of Celery too (the web's posts, the worker's hand-overs): a task carries
    # its sender's trace context to the worker's span of it (runs/tracing.py). Only when
    # spans go somewhere: untraced, the instrumentation's no-op spans would still cost every post.
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        instrument_celery()


def instrument_celery(**_: object) -> None:
    """Connected to Celery's worker start signals (prefork children and solo workers alike)."""
    global _celery_instrumented
    with _lock:
        if _celery_instrumented or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
            return
        _celery_instrumented = True
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        CeleryInstrumentor().instrument()
