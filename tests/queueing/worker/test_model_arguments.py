"""Issue 37, item 1: a saved model instance is a job argument. It travels as a reference
(label, pk, database alias), the worker fetches the row fresh just before the job runs,
a missing row fails the job (or drops it with delete_when_missing_models), and each
reference tags the job ``auth.User:<pk>``. Real Redis, an in-process Worker, the test
database."""
import io
import json
import re
import time
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from horizon import keys
from horizon.repositories import unrun
from queueing import NotSerializable, batch, chain
from queueing.connections import redis_driver
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.helpers import retired_horizon
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
DEFAULT = QueueKeys.for_queue("default")


def drain(**options) -> str:
    out = io.StringIO()
    opts = WorkerOptions(queues=("default",), stop_when_empty=True, sleep=0, memory=0,
                         **options)
    assert Worker(redis_driver("redis"), opts, stdout=out, stderr=io.StringIO()).run() == 0
    return out.getvalue()


def queued(rclient) -> list[bytes]:
    return rclient.lrange(DEFAULT.ready, 0, -1)


def ran() -> list[dict]:
    return jobs.notes()


@pytest.fixture
def alice():
    return User.objects.create_user("alice", "alice@example.com", "s3cret-pass",
                                    first_name="Alice", last_name="Liddell")


def test_the_payload_holds_a_reference_and_no_field_of_the_row(rclient, alice):
    jobs.greet_user.delay(alice, note_text="hi")
    [raw] = queued(rclient)
    payload = json.loads(raw)
    assert payload["args"] == [{"__model__": "auth.User", "pk": alice.pk, "db": "default"}]
    assert payload["kwargs"] == {"note_text": "hi"}
    assert payload["models"] == 1 and f"auth.User:{alice.pk}" in payload["tags"]
    for field in ("alice", "alice@example.com", "Alice", "Liddell", alice.password):
        assert field.encode() not in raw, field


def test_the_job_runs_with_the_row_as_it_is_when_it_runs(rclient, alice):
    jobs.greet_user.delay(alice)
    User.objects.filter(pk=alice.pk).update(username="alice-renamed")
    drain()
    [note] = ran()
    assert note["user"] == {"pk": alice.pk, "username": "alice-renamed", "type": "User"}


def test_an_encrypted_job_reads_its_row_and_carries_no_model_tag(rclient, alice):
    """The reference is sealed with the other arguments, and no ``auth.User:<pk>`` tag
    says in clear whose job it is."""
    jobs.greet_user_sealed.delay(alice)
    [raw] = queued(rclient)
    payload = json.loads(raw)
    assert "args" not in payload and payload["tags"] == [] and payload["models"] == 1
    assert b"auth.User" not in raw
    User.objects.filter(pk=alice.pk).update(username="alice-sealed")
    drain()
    [note] = ran()
    assert note["user"] == {"pk": alice.pk, "username": "alice-sealed", "type": "User"}


def test_rows_inside_lists_dicts_and_tuples(rclient, alice):
    bob = User.objects.create_user("bob")
    jobs.greet_many.delay([alice, bob, alice], {"owner": bob}, pair=(alice, bob))
    payload = json.loads(queued(rclient)[0])
    assert payload["models"] == 6
    assert payload["tags"] == [f"auth.User:{alice.pk}", f"auth.User:{bob.pk}"]
    User.objects.filter(pk=bob.pk).update(username="robert")
    drain()
    [note] = ran()
    assert [u["username"] for u in note["users"]] == ["alice", "robert", "alice"]
    assert note["roles"] == {"owner": {"pk": bob.pk, "username": "robert", "type": "User"}}
    assert [u["username"] for u in note["pair"]] == ["alice", "robert"]
    assert note["same"] is True  # one row read once, the same object wherever it is named


def test_a_deleted_row_fails_the_job_at_once_naming_model_and_key(rclient, alice):
    uuid = jobs.greet_user.delay(alice)  # tries=3: a missing row is not retried
    pk = alice.pk
    alice.delete()
    out = drain()
    assert ran() == []
    failed = FailedJob.objects.get(uuid=uuid)
    assert f"MissingModel: auth.User {pk} no longer exists" in failed.exception
    assert "retrying cannot bring it back" in failed.exception
    assert json.loads(failed.payload)["attempts"] == 1
    assert "FAILED" in out and rclient.zcard(DEFAULT.reserved) == 0


def test_delete_when_missing_models_drops_the_job_and_keeps_it_out_of_the_failed_store(
        rclient, alice, admin_client):
    jobs.greet_user_or_drop.delay(alice)
    jobs.GreetOrDrop.delay(alice)
    jobs.record.delay("no model")  # a completed job: the metrics page lists its queue
    alice.delete()
    out = drain()
    assert [n["label"] for n in ran()] == ["no model"]
    assert not FailedJob.objects.exists()
    assert out.count("DROPPED") == 2 and "no longer exists" in out
    assert queued(rclient) == [] and rclient.zcard(DEFAULT.reserved) == 0
    scraped = admin_client.get("/metrics").content.decode()
    dropped = [line for line in scraped.splitlines()
               if line.startswith("horizon_jobs_dropped_total{") and
               f'job="{jobs.greet_user_or_drop.name}"' in line]
    assert dropped and dropped[0].endswith(" 1.0"), scraped[:2000]
    assert "2 dropped" in admin_client.get("/metrics/").content.decode()  # the queue's row


def test_a_worker_process_that_drops_a_job_lists_it_on_the_dropped_list(
        spawn_worker, rclient, alice, admin_client):
    bob = User.objects.create_user("bob")
    dropped = jobs.greet_user_or_drop.delay(alice)
    kept = jobs.greet_user_or_drop.delay(bob)  # its row is there: the process runs it
    pk = alice.pk
    alice.delete()
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    assert [n["user"]["username"] for n in ran()] == ["bob"]  # it read this database
    assert "DROPPED" in worker.output() and not FailedJob.objects.exists()

    listing = admin_client.get(reverse("horizon:dropped")).content.decode()
    assert dropped in listing and kept not in listing and "pill-dropped" in listing
    assert "1 job dropped" in listing and f">auth.User:{pk}<" in listing  # the row gone
    detail_url = reverse("horizon:job", args=["dropped", dropped])
    assert f'href="{detail_url}"' in listing
    detail = admin_client.get(detail_url)
    assert detail.status_code == 200
    page = detail.content.decode()
    assert "Dropped unrun: a model row was gone" in page and "redis:default" in page
    assert f'href="{reverse("horizon:dropped")}"' in page  # back to the list
    assert admin_client.get(f"/jobs/completed/{dropped}/").status_code == 200  # followed
    metrics = admin_client.get(reverse("horizon:metrics")).content.decode()
    assert re.search(r'<a href="/jobs/dropped/"[^>]*>1 dropped</a>', metrics)


def test_the_dropped_list_is_bounded_as_completed_records_are(rclient, settings, admin_client):
    retired_horizon(settings, "completed_max", trim={"completed": 60, "completed_max": 2})
    users = [User.objects.create_user(f"u{i}") for i in range(3)]
    uuids = [jobs.greet_user_or_drop.delay(user) for user in users]
    User.objects.filter(pk__in=[user.pk for user in users]).delete()
    drain()
    assert unrun.count(rclient, "dropped") == 2  # the oldest went as the third was kept
    assert [item["uuid"] for item in unrun.listed(rclient, "dropped")] == uuids[:0:-1]
    rclient.zadd(keys.dropped(), {uuids[1]: time.time() - 3601})  # past trim.completed
    listing = admin_client.get(reverse("horizon:dropped")).content.decode()
    assert uuids[2] in listing and uuids[1] not in listing  # trimmed as the page is read
    assert unrun.find(rclient, "dropped", uuids[1]) is None


def test_a_row_that_still_exists_runs_under_delete_when_missing_models(alice):
    jobs.greet_user_or_drop.delay(alice)
    drain()
    assert [n["user"]["username"] for n in ran()] == ["alice"]


def test_middleware_that_skips_the_job_runs_before_any_fetch(alice):
    jobs.skipped_greeting.delay(alice)
    alice.delete()  # the fetch would fail: the skip comes first
    out = drain()
    assert "SKIPPED" in out and ran() == [] and not FailedJob.objects.exists()


def test_a_queryset_and_an_unsaved_instance_are_refused_and_nothing_is_queued(
        rclient, alice):
    with pytest.raises(NotSerializable, match=r"QuerySet of auth\.User: pass list\(queryset\)"):
        jobs.greet_user.delay(User.objects.all())
    with pytest.raises(NotSerializable, match=r"unsaved auth\.User .*save\(\) it"):
        jobs.greet_user.delay(User(username="ghost"))
    with pytest.raises(NotSerializable, match=r"argument 'x'\['user'\] is an unsaved"):
        jobs.noop.delay(x={"user": User(username="ghost")})
    with pytest.raises(NotSerializable, match="rename that key"):
        jobs.noop.delay({"__model__": "mine"})
    with pytest.raises(NotSerializable, match="unsaved"):  # a chain refuses as a whole
        chain(jobs.greet_user.s(alice), jobs.greet_user.s(User(username="ghost")))
    assert queued(rclient) == [] and rclient.zcard(DEFAULT.delayed) == 0


def test_model_tags_can_be_turned_off(rclient, alice):
    jobs.greet_untagged.delay(alice)
    jobs.greet_user.using(model_tags=False).delay(alice)
    first, second = (json.loads(raw) for raw in queued(rclient))
    assert first["tags"] == ["plain"] and second["tags"] == []
    assert first["models"] == second["models"] == 1  # still fetched fresh
    drain()
    assert [n["label"] for n in ran()] == ["untagged", "greet"]


def test_an_async_job_fetches_with_the_async_orm(alice):
    jobs.agreet_user.delay(alice)
    User.objects.filter(pk=alice.pk).update(username="async-alice")
    drain()
    [note] = ran()
    assert note["label"] == "async" and note["user"]["username"] == "async-alice"


def test_an_async_job_on_the_pool_fetches_on_its_loop(alice):
    uuid = jobs.agreet_user.delay(alice)
    gone = jobs.agreet_user.delay(User.objects.create_user("carol"))
    User.objects.filter(username="carol").delete()
    drain(concurrency=4)
    assert [n["user"]["username"] for n in ran()] == ["alice"]
    assert FailedJob.objects.filter(uuid=gone).exists()
    assert not FailedJob.objects.filter(uuid=uuid).exists()


def test_chains_and_batches_carry_references(rclient, alice):
    bob = User.objects.create_user("bob")
    chain(jobs.greet_user.s(alice, note_text="first"), jobs.greet_user.s(bob, note_text="then"))
    payload = json.loads(queued(rclient)[0])
    link = payload["chain"][0]
    assert link["args"] == [{"__model__": "auth.User", "pk": bob.pk, "db": "default"}]
    assert b"bob" not in queued(rclient)[0]
    batch([jobs.greet_user.s(bob, note_text="member")]).dispatch()
    User.objects.filter(pk=bob.pk).update(username="bobby")
    drain()
    assert sorted((n["note_text"], n["user"]["username"]) for n in ran()) == [
        ("first", "alice"), ("member", "bobby"), ("then", "bobby")]


def test_the_automatic_tag_finds_a_failed_job_through_the_tag_filter(alice, admin_client):
    uuid = jobs.greet_user.delay(alice)
    other = jobs.explode.delay("no model")
    pk = alice.pk
    alice.delete()
    drain()
    tag = f"auth.User:{pk}"
    page = admin_client.get(f"/failed/?tag={quote(tag)}").content.decode()
    assert uuid in page and other not in page
    detail = admin_client.get(f"/jobs/failed/{uuid}/").content.decode()
    assert f"&lt;auth.User {pk}&gt;" in detail  # the Arguments panel names the row
    assert f"auth.User {pk} no longer exists" in detail


def test_pages_show_a_model_argument_as_its_label_and_key(alice, admin_client):
    """The tag is not masked (text masking would read "auth" as a secret key)."""
    jobs.greet_user.delay(alice, note_text="hi")
    listing = admin_client.get("/jobs/pending/").content.decode()
    assert f"(&lt;auth.User {alice.pk}&gt;, note_text=&quot;hi&quot;)" in listing
    assert f"auth.User:{alice.pk}" in listing and "alice" not in listing


def test_edit_and_retry_keeps_references_and_retags(alice, admin_client, rclient):
    bob = User.objects.create_user("bob")
    uuid = jobs.greet_user.delay(alice)
    User.objects.filter(pk=alice.pk).delete()
    drain()
    assert FailedJob.objects.filter(uuid=uuid).exists()
    edited = json.dumps({"args": [{"__model__": "auth.User", "pk": bob.pk, "db": "default"}],
                         "kwargs": {}})
    answer = admin_client.post(f"/failed/{uuid}/edit/", {"arguments": edited})
    assert answer.status_code in (200, 302), answer.content[:500]
    [raw] = queued(rclient)
    payload = json.loads(raw)
    assert payload["models"] == 1 and f"auth.User:{bob.pk}" in payload["tags"]
    assert f"auth.User:{alice.pk}" not in payload["tags"]
    drain()
    assert [n["user"]["username"] for n in ran()] == ["bob"]


def test_a_schedule_carries_a_reference_and_refuses_a_queryset(rclient, alice):
    from horizon.schedules import store
    from horizon.schedules.definitions import ScheduleError, make

    greet = make(name="greet-one", job=jobs.greet_user.name, every=60, args=[alice])
    store.run_now(greet, by="test")
    [raw] = queued(rclient)
    payload = json.loads(raw)
    assert payload["args"] == [{"__model__": "auth.User", "pk": alice.pk, "db": "default"}]
    assert payload["models"] == 1 and f"auth.User:{alice.pk}" in payload["tags"]
    assert b"alice" not in raw and b"example.com" not in raw
    with pytest.raises(ScheduleError, match="QuerySet of auth.User"):
        make(name="greet-all", job=jobs.greet_user.name, every=60, args=[User.objects.all()])


def test_the_tasks_backend_keeps_djangos_json_rule(rclient, alice):
    from tests.testapp import tasks

    with pytest.raises(TypeError):
        tasks.add.enqueue(alice, 1)
    shaped = {"__model__": "auth.User", "pk": alice.pk, "db": "default"}
    tasks.record_order.enqueue(shaped)  # any JSON: a dict is a dict, never a row
    [raw] = queued(rclient)
    payload = json.loads(raw)
    assert payload["args"] == [shaped] and "models" not in payload
    assert not any(tag.startswith("auth.User") for tag in payload["tags"])


def test_adelay_sends_a_reference(rclient, alice):
    from tests.helpers import run_async

    run_async(jobs.greet_user.adelay(alice))
    [raw] = queued(rclient)
    assert json.loads(raw)["args"] == [
        {"__model__": "auth.User", "pk": alice.pk, "db": "default"}] and b"alice" not in raw


def test_a_unique_job_names_its_lock_with_the_rows_key(rclient, alice):
    """unique_id(user) is given the reference at dispatch: user.pk reads as the row's."""
    assert jobs.greet_once.delay(alice) is not None
    assert jobs.greet_once.delay(alice) is None  # the lock "user-<pk>" is held
    assert len(queued(rclient)) == 1
    drain()
    assert [n["user"]["username"] for n in ran()] == ["alice"]


def test_a_sync_connection_reads_the_row_inline(settings, alice):
    from django.test import override_settings

    from queueing import MissingModel

    queue = {**settings.QUEUE, "connections": {**settings.QUEUE["connections"],
                                                "inline": {"driver": "sync"}}}
    with override_settings(QUEUE=queue):
        jobs.greet_user.using(connection="inline").delay(alice)
        ghost = User.objects.create_user("ghost")
        ghost_pk = ghost.pk
        User.objects.filter(pk=ghost_pk).delete()
        with pytest.raises(MissingModel, match=f"auth.User {ghost_pk} no longer exists"):
            jobs.greet_user.using(connection="inline").delay(ghost)
    assert [n["user"]["username"] for n in ran()] == ["alice"]
