"""The Batches pages and actions (Django test client; the browser test is in
tests/browser/test_batches_browser.py), the CLI and pruning."""
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client

from horizon.models import AuditEntry
from queueing import Batch, batch
from queueing.batches.prune import prune
from queueing.connections import redis_driver
from tests.helpers import settle_ready
from tests.testapp.jobs import batch_callback, batch_member

pytestmark = pytest.mark.django_db(transaction=True)
HX = {"HX-Request": "true"}


def login(*codenames):
    user = User.objects.create_user("ops", password="pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator():
    return login("operate_dashboard")


def settle_all(outcome="s"):
    """Settle every ready job of `default` in-process, as a worker's acknowledgement
    would (the process-level paths are tests/test_batches*.py)."""
    while settle_ready(100, outcome):
        pass


def test_the_list_shows_name_progress_counts_and_state(operator):
    first = batch([batch_member.s(i) for i in range(4)]).name("invoices-march").dispatch()
    batch(batch_member.s(9)).name("thumbnails").dispatch()
    response = operator.get("/batches/")
    body = response.content.decode()
    assert response.status_code == 200
    assert "invoices-march" in body and "thumbnails" in body
    assert 'href="/batches/"' in body and 'aria-current="page"' in body  # in the nav
    assert f'data-batch="{first.id}" data-progress="0"' in body
    assert 'hx-trigger="every 2s"' in body
    driver = redis_driver("redis")
    got = driver.reserve("default", 1, owner="t")  # the oldest member: of invoices-march
    driver.acknowledge(got.jobs)
    partial = operator.get("/batches/", headers=HX).content.decode()
    assert "<html" not in partial
    assert f'data-batch="{first.id}" data-progress="25"' in partial
    assert "1 / 4" in partial and "Running" in partial


def test_search_by_name(operator):
    batch(batch_member.s(1)).name("invoices-march").dispatch()
    batch(batch_member.s(2)).name("thumbnails").dispatch()
    body = operator.get("/batches/?q=INVOICES", headers=HX).content.decode()
    assert "invoices-march" in body and "thumbnails" not in body
    assert "No batch matches" in operator.get("/batches/?q=zzz", headers=HX).content.decode()


def test_detail_lists_failed_jobs_and_retry_is_audited(operator, rclient):
    from queueing.state import failed
    found = batch(batch_member.s(1), batch_member.s(2)).allow_failures().name("b").dispatch()
    driver = redis_driver("redis")
    got = driver.reserve("default", 2, owner="t")
    failed.record(connection="redis", queue="default", raw=got.jobs[0].raw,
                  exception="RuntimeError: boom", job_uuid=re.search(
                      rb'"uuid":"([^"]+)"', bytes(got.jobs[0].raw)).group(1).decode(),
                  job_name="tests.testapp.jobs.batch_member")
    driver.delete(got.jobs[0], outcome="f")
    driver.acknowledge(got.jobs[1:])
    body = operator.get(f"/batches/{found.id}/").content.decode()
    assert "RuntimeError: boom" in body and "Retry failed jobs (1)" in body
    assert 'data-state="failed"' in body
    response = operator.post(f"/batches/{found.id}/retry/",
                             {"fragment": "batch", "batch": found.id}, headers=HX)
    assert response.status_code == 200
    assert "Retried 1 failed job of batch b." in response.content.decode()
    after = Batch.find(found.id)
    assert (after.failed, after.pending, after.finished) == (0, 1, False)
    assert AuditEntry.objects.filter(action="retry batch", target=found.id).exists()
    settle_all()
    assert Batch.find(found.id).state == "finished"


def test_cancel_is_audited_and_needs_operate(operator):
    found = batch(batch_member.s(1), batch_member.s(2)).name("c").dispatch()
    viewer = Client()
    viewer.force_login(User.objects.create_user("viewer", password="pw", is_staff=True))
    assert viewer.post(f"/batches/{found.id}/cancel/").status_code == 403
    assert not Batch.find(found.id).cancelled
    body = operator.get(f"/batches/{found.id}/").content.decode()
    assert "Cancel batch" in body
    response = operator.post(f"/batches/{found.id}/cancel/",
                             {"fragment": "batch", "batch": found.id}, headers=HX)
    assert "Cancelled batch c" in response.content.decode()
    assert Batch.find(found.id).cancelled
    assert AuditEntry.objects.filter(action="cancel batch", target=found.id).exists()
    again = operator.post(f"/batches/{found.id}/cancel/", {"fragment": "batch",
                                                           "batch": found.id}, headers=HX)
    assert "already cancelled" in again.content.decode()


def test_actions_need_csrf(operator):
    found = batch(batch_member.s(1)).dispatch()
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(User.objects.get(username="ops"))
    assert strict.post(f"/batches/{found.id}/cancel/").status_code == 403
    assert not Batch.find(found.id).cancelled


def test_unknown_batch_is_404(operator):
    assert operator.get("/batches/nope/").status_code == 404
    assert operator.post("/batches/nope/cancel/").status_code == 404


def test_queue_retry_batch_command(capsys):
    from queueing.state import failed
    found = batch(batch_member.s(1)).allow_failures().dispatch()
    driver = redis_driver("redis")
    got = driver.reserve("default", 1, owner="t")
    uuid = re.search(rb'"uuid":"([^"]+)"', bytes(got.jobs[0].raw)).group(1).decode()
    failed.record(connection="redis", queue="default", raw=got.jobs[0].raw,
                  exception="RuntimeError", job_uuid=uuid, job_name="x")
    driver.delete(got.jobs[0], outcome="f")
    assert Batch.find(found.id).finished
    call_command("queue_retry_batch", found.id)
    assert "1 failed job(s) pushed again" in capsys.readouterr().out
    assert Batch.find(found.id).pending == 1
    with pytest.raises(CommandError, match="no batch"):
        call_command("queue_retry_batch", "missing")


def test_prune_forgets_old_finished_batches_only(capsys):
    old_done = batch(batch_member.s(1)).dispatch()
    settle_all()
    old_running = batch(batch_member.s(2)).dispatch()
    fresh_done = batch(batch_member.s(3)).dispatch()
    assert Batch.find(old_done.id).finished and not Batch.find(old_running.id).finished
    import time
    later = time.time() + 3 * 3600
    store = redis_driver("redis").batches
    client = redis_driver("redis").client
    client.zadd("queues:batches", {fresh_done.id: later - 60})  # created just now, then
    client.hset(f"queues:{{default}}:batch:{fresh_done.id}", "created_at", later - 60)
    assert prune(2, now=later) == 1
    assert Batch.find(old_done.id) is None
    assert Batch.find(old_running.id) is not None and Batch.find(fresh_done.id) is not None
    assert client.keys(f"*{old_done.id}*") == []
    assert prune(2, unfinished_hours=1, now=later) == 1  # the old unfinished one
    # a long batch, created long ago, that finished a moment ago is kept
    long_one = batch(batch_member.s(4)).dispatch()
    settle_all()
    client.hset(f"queues:{{default}}:batch:{long_one.id}", "created_at", 1.0)
    client.zadd("queues:batches", {long_one.id: 1.0})
    assert prune(2) == 0 and Batch.find(long_one.id).finished
    assert store.count() == 2  # fresh_done and long_one
    call_command("queue_prune_batches", "--hours=0")
    assert "Pruned" in capsys.readouterr().out


def test_the_master_prunes_on_a_schedule(settings):
    from horizon.configuration.settings import parse
    from horizon.supervisor.batch_pruning import BatchPruner
    old = batch(batch_member.s(1)).dispatch()
    settle_all()
    client = redis_driver("redis").client
    client.hset(f"queues:{{default}}:batch:{old.id}", mapping={"created_at": 1.0,
                                                                 "finished_at": 2.0})
    client.zadd("queues:batches", {old.id: 1.0})
    config = parse({"trim": {"batches": 60}})  # an hour; the master prunes every 600 s
    logs = []
    first = BatchPruner(config, client, owner="m1", log=logs.append)
    second = BatchPruner(config, client, owner="m2", log=logs.append)
    assert first.tick(now=100.0) == 1 and Batch.find(old.id) is None
    assert second.tick(now=100.0) == 0  # one master per interval
    assert first.tick(now=120.0) == 0  # not due
    assert logs == ["pruned 1 batch record(s)"]


def test_horizon_batches_settings_are_checked():
    from horizon.configuration.settings import HorizonConfigError, parse
    with pytest.raises(HorizonConfigError):
        parse({"trim": {"batches": -1}})
    with pytest.raises(HorizonConfigError):
        parse({"trim": {"batches_unfinshed": 1}})
    assert parse({}).batch_prune_hours == 24


def test_callbacks_pushed_by_the_count_carry_fresh_times():
    import json
    import time
    found = batch(batch_member.s(1)).then(batch_callback.s("then")).dispatch()
    time.sleep(0.05)
    settle_start = time.time()
    driver = redis_driver("redis")
    got = driver.reserve("default", 1, owner="t")
    driver.acknowledge(got.jobs)
    [raw] = driver.client.lrange("queues:{default}", 0, -1)
    data = json.loads(raw)
    assert data["pushedAt"] >= settle_start and data["availableAt"] >= settle_start
    assert data["batchCallback"] == {"id": found.id, "queue": "default", "kind": "then"}
    assert driver.locate("default", data["uuid"])[0] == "pending"  # indexed like a push


def test_adispatch_from_async_code():
    from asgiref.sync import async_to_sync
    found = async_to_sync(batch(batch_member.s(1)).name("async").adispatch)()
    assert Batch.find(found.id).name == "async"


def test_deleting_a_waiting_member_from_the_dashboard_counts_it_cancelled(operator):
    found = batch(batch_member.s(1), batch_member.s(2)).finally_(
        batch_callback.s("finally")).dispatch()
    driver = redis_driver("redis")
    [first, second] = [json_of(raw) for raw in driver.pending("default", 0, -1)]
    response = operator.post(f"/jobs/pending/{second['uuid']}/delete/", {
        "fragment": "jobs", "state": "pending", "job_queue": "redis:default", "at": "1"},
        headers=HX)
    assert "Deleted pending job" in response.content.decode()
    after = Batch.find(found.id)
    assert (after.cancelled_jobs, after.pending) == (1, 1)
    settle_all()
    done = Batch.find(found.id)
    assert done.finished and done.succeeded == 1 and done.callbacks["finally"] is not None


def json_of(raw):
    import json
    return json.loads(raw)
