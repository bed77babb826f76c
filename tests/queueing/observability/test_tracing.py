"""Trace context through the payload's headers: the worker's span continues the trace of
the span that dispatched the job (OpenTelemetry SDK with an in-memory exporter)."""
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.observability import tracing
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.testapp import jobs

EXPORTER = InMemorySpanExporter()
# The in-process worker checks Django's connections around each job once the process
# has opened one (as any earlier test may have): database access must be allowed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module", autouse=True)
def provider():
    sdk = TracerProvider()
    sdk.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(sdk)  # once per process; later calls are ignored by OTel
    tracing._provider_looked_at = float("-inf")  # seen at the next job, not a second later
    yield


def test_headers_are_empty_without_an_active_trace(driver):
    jobs.record.delay("no-trace")
    data = payload_lib.decode(driver.pending("default")[0]).data
    assert data["headers"] == {}


def test_the_worker_span_is_a_child_of_the_dispatching_span(driver):
    EXPORTER.clear()
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("web request") as parent:
        jobs.record.delay("traced")
    headers = payload_lib.decode(driver.pending("default")[0]).data["headers"]
    assert "traceparent" in headers
    worker = Worker(connections.redis_driver("redis"),
                    WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0,
                                  quiet=True, memory=0))
    assert worker.run() == 0
    [job_span] = [s for s in EXPORTER.get_finished_spans()
                  if s.name == "run tests.testapp.jobs.record"]
    assert job_span.parent is not None
    assert job_span.parent.span_id == parent.get_span_context().span_id
    assert job_span.context.trace_id == parent.get_span_context().trace_id
    assert job_span.kind == trace.SpanKind.CONSUMER


def test_a_provider_set_after_start_is_seen_within_a_second(monkeypatch):
    monkeypatch.setattr(tracing, "_provider_set", False)
    monkeypatch.setattr(tracing, "_provider_looked_at", float("-inf"))
    assert tracing.enabled()  # looked at once: the SDK's provider is set
    monkeypatch.setattr(tracing, "_provider_set", False)
    assert not tracing.enabled()  # not looked at again within the second (cost per job)
    monkeypatch.setattr(tracing, "_provider_looked_at", float("-inf"))
    assert tracing.enabled()


def test_tracing_can_be_turned_off(settings, driver, monkeypatch):
    monkeypatch.setattr(tracing, "_otel", None)
    settings.QUEUE_TRACING = False
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("web request"):
        jobs.record.delay("untraced")
    assert payload_lib.decode(driver.pending("default")[0]).data["headers"] == {}
    monkeypatch.setattr(tracing, "_otel", None)
