"""The Prometheus exposition: a prometheus_client Collector over Horizon's Redis state.

Nothing here keeps counts in the web process: each scrape reads what workers and
masters wrote to Redis (see horizon/repositories/counters.py), so any number of web
processes answer the same numbers, and a restart of one loses nothing. Every read is an
index or counter read: series hashes, LLEN/ZCARD per queue, LINDEX 0 for latency,
published supervisor states, and one indexed COUNT per queue in the failed store.

Labels stay bounded: ``connection``, ``queue`` (known queues only), ``job`` (registered
names only), ``supervisor`` and ``state``; never an id.
"""
from __future__ import annotations

import time

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from horizon.queue_reads.away import REDIS_ERRORS
from horizon.queue_reads.rows import queue_rows
from horizon.repositories import counters, horizon_client, trimmed
from horizon.repositories import state as state_repo
from horizon.repositories.latency import oldest_ages
from queueing.failover.state import read_all as failover_statuses
from queueing.models import FailedJob

COUNTERS = {
    "processed": "Jobs that completed successfully.",
    "failed": "Jobs that failed for good (sent to the failed store), whatever ended them: "
              "an exception, a timeout, a lost worker, the poison cap or a cancel.",
    "released": "Attempts that raised and were released for a later retry.",
    "timed_out": "Attempts stopped by their timeout (released or failed).",
    "cancelled": "Running jobs an operator cancelled (each also counted as failed).",
    "expired": "Jobs not started before their expiry (expires=...): never run, not failed.",
    "dropped": "Jobs whose model argument's row was gone, dropped unrun "
               "(delete_when_missing_models): never run, not failed.",
}


def _histogram(name: str, doc: str) -> HistogramMetricFamily:
    return HistogramMetricFamily(name, doc, labels=["connection", "queue", "job"])


def _cumulative(bounds: tuple[float, ...], per_bucket: list[int]) -> list[tuple[str, int]]:
    out, total = [], 0
    for bound, count in zip([*map(repr, bounds), "+Inf"], per_bucket):
        total += count
        out.append((bound, total))
    return out


class HorizonCollector(Collector):
    def collect(self):
        yield from self.job_metrics()
        yield from self.queue_metrics()
        yield self.trimmed()
        yield GaugeMetricFamily("horizon_redis_up", REDIS_UP_HELP, value=1)

    def trimmed(self):
        """Records the master trimmed to keep the stores within HORIZON['trim']."""
        family = CounterMetricFamily(
            "horizon_trimmed", "Records the master trimmed by age or count (failed jobs, "
            "job attempt timelines).", labels=["store"])
        for store, count in trimmed.totals(horizon_client()).items():
            family.add_metric([store], count)
        return family

    def job_metrics(self):
        series = counters.read_all(horizon_client())
        families = {o: CounterMetricFamily(f"horizon_jobs_{o}", doc,
                                           labels=["connection", "queue", "job"])
                    for o, doc in COUNTERS.items()}
        runtime = _histogram("horizon_job_runtime_seconds",
                             "How long job attempts ran, whatever their outcome.")
        wait = _histogram("horizon_queue_wait_seconds",
                          "Reserve time minus available time, for first deliveries.")
        for s in series:
            labels = [s.connection, s.queue, s.job]
            for outcome, family in families.items():
                family.add_metric(labels, s.counts[outcome])
            runtime.add_metric(labels, _cumulative(counters.RUNTIME_BUCKETS, s.runtime_buckets),
                               s.runtime_sum)
            wait.add_metric(labels, _cumulative(counters.WAIT_BUCKETS, s.wait_buckets),
                            s.wait_sum)
        yield from families.values()
        yield runtime
        yield wait

    def queue_metrics(self):
        client = horizon_client()
        sups = state_repo.supervisors(client)
        rows = queue_rows(sups)
        now = time.time()
        ages = oldest_ages([(r.ref.connection, r.ref.name) for r in rows], now)
        depth = GaugeMetricFamily("horizon_queue_jobs", "Jobs in a queue, by state.",
                                  labels=["connection", "queue", "state"])
        latency = GaugeMetricFamily(
            "horizon_queue_latency_seconds",
            "Age of the oldest ready job (0 when the queue is empty).",
            labels=["connection", "queue"])
        paused = GaugeMetricFamily("horizon_queue_paused", "1 when the queue is paused.",
                                   labels=["connection", "queue"])
        reserved = 0
        for row in rows:
            labels = [row.ref.connection, row.ref.name]
            failed = FailedJob.objects.filter(connection=row.ref.connection,
                                              queue=row.ref.name).count()
            for state, value in (("ready", row.pending), ("delayed", row.delayed),
                                 ("reserved", row.reserved), ("failed", failed)):
                depth.add_metric([*labels, state], value)
            latency.add_metric(labels, ages[(row.ref.connection, row.ref.name)])
            paused.add_metric(labels, 1 if row.paused else 0)
            if row.processes:
                reserved += row.reserved
        yield depth
        yield latency
        yield paused

        processes = GaugeMetricFamily("horizon_supervisor_processes",
                                      "Worker processes a supervisor runs.",
                                      labels=["master", "supervisor"])
        sup_paused = GaugeMetricFamily("horizon_supervisor_paused",
                                       "1 when the supervisor is paused.",
                                       labels=["master", "supervisor"])
        for sup in sups:
            processes.add_metric([sup.master, sup.name], sup.total_processes)
            sup_paused.add_metric([sup.master, sup.name], 1 if sup.status == "paused" else 0)
        yield processes
        yield sup_paused
        total = sum(s.total_processes for s in sups)
        busy = min(reserved, total)
        workers = GaugeMetricFamily(
            "horizon_workers", "Worker processes busy with a job or idle (busy: reserved "
            "jobs in the queues they serve, at most the process count).", labels=["state"])
        workers.add_metric(["busy"], busy)
        workers.add_metric(["idle"], total - busy)
        yield workers


class FailoverCollector(Collector):
    """Failover connections (issue 35), read from their fallback store, not from Redis:
    a scrape still answers these while Redis is away."""

    def collect(self):
        now = time.time()
        statuses = failover_statuses(now)
        failing = GaugeMetricFamily(
            "horizon_failover_active", "1 while dispatches skip the connection (its "
            "circuit is open, as the last process to switch published).",
            labels=["connection", "skipped", "to"])
        since = GaugeMetricFamily(
            "horizon_failover_since_timestamp_seconds", "Unix time the current failover "
            "began (0 while none).", labels=["connection", "skipped"])
        waiting = GaugeMetricFamily(
            "horizon_failover_waiting_jobs", "Jobs waiting on a failover connection's later "
            "connections (ready and delayed), to be drained back.", labels=["connection"])
        oldest = GaugeMetricFamily(
            "horizon_failover_oldest_seconds", "Age of the oldest ready job waiting on a "
            "failover connection's later connections (0 when none).", labels=["connection"])
        unreadable = GaugeMetricFamily(
            "horizon_failover_unreadable", "1 when a later connection or the published "
            "state could not be read.", labels=["connection"])
        for status in statuses:
            switches = {s.skipped: s for s in status.switches}
            for index, skipped in enumerate(status.targets[:-1]):
                found = switches.get(skipped)
                is_open = found is not None and found.open
                failing.add_metric([status.name, skipped, (found.to if found and found.to
                                   else status.targets[index + 1])], 1 if is_open else 0)
                since.add_metric([status.name, skipped], found.since if is_open and found
                                 else 0)
            waiting.add_metric([status.name], status.waiting)
            oldest.add_metric([status.name], status.oldest)
            unreadable.add_metric([status.name], 1 if status.unreadable else 0)
        yield from (failing, since, waiting, oldest, unreadable)


def exposition() -> bytes:
    """The text format for one scrape (a fresh registry: no state kept in this process).
    With a Redis it reads away, the failover numbers and ``horizon_redis_up 0`` are still
    answered: that is when they matter."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FailoverCollector())
    registry.register(HorizonCollector())
    try:
        return generate_latest(registry)
    except REDIS_ERRORS:
        fallback = CollectorRegistry(auto_describe=False)
        fallback.register(FailoverCollector())
        return generate_latest(fallback) + REDIS_DOWN


REDIS_UP_HELP = ("1 when every Redis this scrape reads answered (0: only the failover "
                 "numbers could be read).")
REDIS_DOWN = (f"# HELP horizon_redis_up {REDIS_UP_HELP}\n"
              "# TYPE horizon_redis_up gauge\nhorizon_redis_up 0.0\n").encode()
