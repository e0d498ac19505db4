"""A real OTLP/HTTP receiver on 127.0.0.1 for tests: it decodes each export's protobuf payload
(``ExportTraceServiceRequest`` on ``/v1/traces``, ``ExportMetricsServiceRequest`` on
``/v1/metrics``) as a collector would, and keeps the raw bodies too (to search them for
secrets). Point a process at it with :meth:`Receiver.env`."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.support.loopback import QuietHandler, loopback_server


def value(any_value: AnyValue) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return None if kind is None else getattr(any_value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in pairs}


@dataclass(frozen=True)
class Span:
    """One exported span, with its process's resource attributes."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    attributes: dict[str, Any]
    links: list[tuple[str, str, dict[str, Any]]]  # (trace id, span id, attributes)
    resource: dict[str, Any]
    start: int


@dataclass(frozen=True)
class Point:
    """One data point of an exported metric: its attributes and its process's resource."""

    metric: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    value: float  # a sum's or gauge's value, a histogram's count


@dataclass
class Receiver:
    url: str = ""
    spans: list[Span] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def env(self, **extra: str) -> dict[str, str]:
        """The environment that exports a process's spans and metrics here, often."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.url, "OTEL_TRACES_EXPORTER": "otlp",
                "OTEL_METRICS_EXPORTER": "otlp", "OTEL_METRIC_EXPORT_INTERVAL": "300",
                "OTEL_BSP_SCHEDULE_DELAY": "100", **extra}

    def wait_for(self, predicate: Callable[[Receiver], bool], *, what: str,
                 timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self):
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope in resource_spans.scope_spans:
                self.spans += [Span(
                    name=s.name, trace_id=s.trace_id.hex(), span_id=s.span_id.hex(),
                    parent_id=s.parent_span_id.hex(), kind=s.kind, status_code=s.status.code,
                    status_message=s.status.message, attributes=attributes(s.attributes),
                    links=[(lk.trace_id.hex(), lk.span_id.hex(), attributes(lk.attributes))
                           for lk in s.links],
                    resource=resource, start=s.start_time_unix_nano) for s in scope.spans]

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource_metrics in request.resource_metrics:
            resource = attributes(resource_metrics.resource.attributes)
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    for p in getattr(metric, kind).data_points:
                        number = (p.count if kind == "histogram" else
                                  p.as_double if p.WhichOneof("value") == "as_double"
                                  else p.as_int)
                        self.points.append(Point(metric.name, attributes(p.attributes),
                                                 resource, number))


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    state = Receiver()
    lock = threading.Lock()

    class Handler(QuietHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            with lock:
                state.bodies.append(body)
                if self.path == "/v1/traces":
                    state._traces(body)
                    answer = ExportTraceServiceResponse().SerializeToString()
                else:
                    state._metrics(body)
                    answer = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    with loopback_server(Handler) as url:
        state.url = url
        yield state
