"""Issue 26, item 4: every operator action leaves an audit entry, and pruning is by age
with a floor, so a burst of actions cannot erase recent history. Real Redis, SQLite."""
import datetime as dt
import time

import pytest
from django.urls import get_resolver
from django.utils import timezone

from horizon import audit
from horizon.models import AuditEntry
from queueing import batch
from queueing.connections import redis_driver
from queueing.entries.payload import encode
from queueing.middleware import keys, lock_calls
from queueing.state import failed as failed_store
from queueing.state.locks import key_ref
from tests.helpers import EVERY_SECOND, payload, publish, retired_horizon, superuser_client
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client():
    return superuser_client()


def failed_row() -> dict:
    data = payload()
    failed_store.record(connection="redis", queue="default", raw=encode(data), exception="E",
                        job_uuid=data["uuid"], job_name=data["job"])
    return data


def pending_job() -> dict:
    data = payload()
    redis_driver("redis").push("default", encode(data))
    return data


def delayed_job() -> tuple[dict, float]:
    data, at = payload(), time.time() + 600
    redis_driver("redis").later("default", encode(data), at)
    return data, at


def action_posts() -> dict:
    """One successful POST per action URL name: (path, form data)."""
    retried, deleted, pending = failed_row(), failed_row(), pending_job()
    failed_row()
    (delayed, at), (runnable, run_at) = delayed_job(), delayed_job()
    ticked_failed, ticked_pending, edited = failed_row(), failed_row(), failed_row()
    ticked_pending = pending_job()
    overlap = keys.control_key("overlap", "audit:1")
    lock_calls.take(redis_driver("redis").client, overlap, "job-1 h:1:w", 60_000)
    running = payload()
    redis_driver("redis").push("cancel-me", encode(running))
    redis_driver("redis").pop("cancel-me")  # reserved: as far as Cancel can tell, it runs
    to_retry, to_cancel = (batch(jobs.record.s("audit")).dispatch() for _ in range(2))
    return {  # the ticked and edited rows go first: "retry matching" takes every row
        "failed-selected": ("/failed/selected/retry/", {"pick": ticked_failed["uuid"]}),
        "failed-edit": (f"/failed/{edited['uuid']}/edit/",
                        {"arguments": '{"args": ["edited"], "kwargs": {}}'}),
        "failed-retry": (f"/failed/{retried['uuid']}/retry/", {}),
        "failed-delete": (f"/failed/{deleted['uuid']}/delete/", {}),
        "failed-retry-matching": ("/failed/retry/", {"q": "work"}),
        "failed-delete-matching": ("/failed/delete/", {"q": "work"}),
        "job-delete": (f"/jobs/pending/{pending['uuid']}/delete/",
                       {"job_queue": "redis:default", "at": "0"}),
        "job-delete delayed": (f"/jobs/delayed/{delayed['uuid']}/delete/",
                               {"job_queue": "redis:default", "score": repr(at)}),
        "job-run": (f"/jobs/delayed/{runnable['uuid']}/run/",
                    {"job_queue": "redis:default", "score": repr(run_at)}),
        "control": ("/control/pause/", {}),
        "master-control": ("/masters/web-1/pause/", {}),
        "supervisor-control": ("/supervisors/web-1:supervisor-1/pause/", {}),
        "queue-control": ("/queues/redis:default/pause/", {}),
        "schedule-control": ("/schedules/tick/pause/", {}),
        "schedule-control resume": ("/schedules/tick/continue/", {}),
        "schedule-run": ("/schedules/tick/run/", {}),
        "job-cancel": (f"/jobs/running/{running['uuid']}/cancel/", {"queue": "redis:cancel-me"}),
        "lock-release": ("/locks/release/", {"connection": "redis", "lock": key_ref(overlap),
                                             "owner": "job-1 h:1:w"}),
        "jobs-selected": ("/jobs/pending/selected/delete/",
                          {"pick": f"redis:default|{ticked_pending['uuid']}|0"}),
        "batch-retry": (f"/batches/{to_retry.id}/retry/", {}),
        "batch-cancel": (f"/batches/{to_cancel.id}/cancel/", {}),
        "monitoring-watch": ("/monitoring/actions/watch/", {"tag": "tenant:audited"}),
        "monitoring-stop": ("/monitoring/tenant:audited/stop/", {}),  # after the watch
    }


def action_url_names() -> set[str]:
    resolver = get_resolver("horizon.dashboard.urls")
    return {p.name for p in resolver.url_patterns
            if getattr(p.callback, "horizon_action", False)}


def test_every_operator_action_is_audited(client, rclient, settings):
    settings.HORIZON = {**settings.HORIZON, "schedule": [EVERY_SECOND]}
    publish(rclient)
    posts = action_posts()
    assert action_url_names() == {name.split()[0] for name in posts}, \
        "a new action needs a case here (and an audit.record call)"
    for name, (path, data) in posts.items():
        before = AuditEntry.objects.count()
        response = client.post(path, data)
        assert response.status_code in (200, 302), (name, response.status_code)
        assert b"flash-error" not in response.content, (name, response.content[:400])
        assert AuditEntry.objects.count() == before + 1, f"{name} left no audit entry"
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"pause schedule", "continue schedule", "run schedule", "watch tag",
            "stop watching tag"} <= actions
    page = client.get("/audit/").content.decode()
    assert "run schedule" in page and "tick" in page


def test_a_burst_of_actions_keeps_the_last_days_entries(settings):
    retired_horizon(settings, "audit_keep", audit_keep=1000, trim={"audit": 7 * 1440})
    yesterday = audit.record("ops", "pause queue", "redis:yesterday")
    AuditEntry.objects.filter(id=yesterday.id).update(at=timezone.now() - dt.timedelta(hours=20))
    ancient = audit.record("ops", "pause queue", "redis:ancient")
    AuditEntry.objects.filter(id=ancient.id).update(at=timezone.now() - dt.timedelta(days=30))
    for index in range(20_000):
        audit.record("intruder", "pause queue", f"redis:q{index}")
    kept = set(AuditEntry.objects.values_list("target", flat=True))
    assert "redis:yesterday" in kept, "the burst erased the last day's history"
    assert "redis:ancient" not in kept, "entries past the age and the floor are pruned"
    assert AuditEntry.objects.count() >= 20_000


def test_old_entries_beyond_the_floor_are_pruned(settings):
    retired_horizon(settings, "audit_keep", audit_keep=3, trim={"audit": 1440})
    entries = [audit.record("ops", "pause queue", f"redis:q{i}") for i in range(6)]
    AuditEntry.objects.update(at=timezone.now() - dt.timedelta(days=2))
    audit.prune(entries[-1].id)
    assert list(AuditEntry.objects.values_list("target", flat=True)) == [
        "redis:q5", "redis:q4", "redis:q3"]
