"""Trace context carried in the payload's ``headers`` (optional OpenTelemetry).

With the ``otel`` extra installed (``pip install horizon-django[otel]``), dispatch
injects the current OpenTelemetry context into ``headers`` and the worker runs the job
in a CONSUMER span whose parent is the dispatching span, the way Celery's
instrumentation does. Without it, the import is tried once and every call returns at
once: headers stay ``{}`` and jobs run exactly as before. Set
``QUEUE_TRACING = False`` in settings to turn it off even when OpenTelemetry is there.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_otel: Any = None  # None: not looked up yet; False: not installed or turned off


def _api() -> Any:
    global _otel
    if _otel is None:
        from django.conf import settings

        if not getattr(settings, "QUEUE_TRACING", True):
            _otel = False
            return _otel
        try:
            from opentelemetry import context, trace
        except ImportError:
            _otel = False
        else:
            _otel = (context, trace)
    return _otel


def _propagate() -> Any:
    """OpenTelemetry's propagators (about twenty modules), loaded with the first payload
    that carries or reads a trace context, not with a worker's first job (issue 52)."""
    from opentelemetry import propagate

    return propagate


_provider_set = False  # OpenTelemetry sets a tracer provider once, for good
_provider_looked_at = float("-inf")  # monotonic time of the last look while none was set
PROVIDER_LOOK_EVERY = 1.0  # seconds between looks for a provider set after start-up


def enabled() -> bool:
    """Whether a job would be recorded in a span: OpenTelemetry installed, not turned
    off, and a tracer provider set (the SDK's, say). With only the API installed, every
    span is a no-op that still cost a no-op job about a fifth of its time. A provider,
    once set, cannot be replaced; while none is, the worker looks once a second, not
    once per job."""
    global _provider_set, _provider_looked_at
    api = _api()
    if not api:
        return False
    if _provider_set:
        return True
    now = time.monotonic()
    if now - _provider_looked_at < PROVIDER_LOOK_EVERY:
        return False
    _provider_looked_at = now
    provider = api[1].get_tracer_provider()
    _provider_set = not isinstance(provider, (api[1].ProxyTracerProvider,
                                              api[1].NoOpTracerProvider))
    return _provider_set


def outgoing_headers() -> dict[str, str]:
    """Headers for a new payload: the current trace context, or {} (no OpenTelemetry)."""
    api = _api()
    if not api:
        return {}
    carrier: dict[str, str] = {}
    _propagate().inject(carrier)
    return carrier


@contextmanager
def job_span(job: Any) -> Iterator[None]:
    """Run a job inside a span continuing the trace in its headers (no-op without OTel)."""
    api = _api()
    headers = job.data.get("headers") if job is not None else None
    if not api or not isinstance(headers, dict):
        yield
        return
    trace = api[1]
    parent = _propagate().extract({str(k): str(v) for k, v in headers.items()})
    tracer = trace.get_tracer("queueing")
    with tracer.start_as_current_span(
            f"run {job.job}", context=parent, kind=trace.SpanKind.CONSUMER,
            attributes={"messaging.system": "horizon-django",
                        "messaging.message.id": job.uuid,
                        "messaging.destination.name": str(job.data.get("queue") or ""),
                        "queueing.attempts": job.attempts}):
        yield
