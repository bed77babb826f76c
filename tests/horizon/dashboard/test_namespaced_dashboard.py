"""Issue 40, item 1: the dashboard of one project on a shared Redis database shows and
acts on that project's namespace only: its jobs, its masters, its failed counters; its
pause buttons reach its own masters and queues, never the other project's."""
import time
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.test import override_settings

from horizon import keys
from horizon.repositories import commands, horizon_client, state
from queueing import connections
from tests.helpers import push, text

pytestmark = pytest.mark.django_db
A, B = "app-a", "app-b"


@contextmanager
def project(name: str):
    with override_settings(QUEUE={**settings.QUEUE, "namespace": name}):
        yield


def seed(name: str) -> None:
    """One pending job and one live master, named after the project."""
    with project(name):
        push(connections.queue_driver("redis"), name=f"app.jobs.only_in_{name[-1]}")
        state.publish_master(horizon_client(), state.MasterState(
            name=f"master-of-{name}", pid=4242, host=f"{name}.internal", status="running",
            started_at=time.time() - 60, supervisors=[]))


def test_each_projects_dashboard_shows_only_its_own_jobs_and_masters(admin_client, rclient):
    seed(A)
    seed(B)
    for mine, other in ((A, B), (B, A)):
        with project(mine):
            pending = text(admin_client.get("/jobs/pending/"))
            workers = text(admin_client.get("/workers/"))
        assert f"only_in_{mine[-1]}" in pending and f"only_in_{other[-1]}" not in pending
        assert f"master-of-{mine}" in workers and f"master-of-{other}" not in workers
    assert not rclient.exists(keys.masters()), "no un-namespaced Horizon state was written"


def test_one_projects_pause_buttons_never_reach_the_other(admin_client):
    seed(A)
    seed(B)
    with project(A):
        assert admin_client.post("/control/pause/").status_code in (200, 302)
        assert admin_client.post("/queues/redis:default/pause/").status_code in (200, 302)
        assert connections.queue_driver("redis").is_paused("default")
        assert [c["command"] for c in commands.drain(horizon_client(), f"master-of-{A}")] \
            == ["pause"]
    with project(B):
        assert not connections.queue_driver("redis").is_paused("default")
        assert commands.drain(horizon_client(), f"master-of-{B}") == []
        assert [m.name for m in state.masters(horizon_client())] == [f"master-of-{B}"]
