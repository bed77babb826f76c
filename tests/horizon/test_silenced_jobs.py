"""Silenced jobs (issue 37): a silenced job's success is on the Silenced list, not on
the Completed list nor in its counts; it still counts in the metrics; its failure is a
failure like any other. Real Redis, a real worker loop, the pages through the client."""
import io

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from horizon.configuration.settings import settings_errors
from horizon.repositories import metrics, recent
from queueing.connections import redis_driver
from queueing.models import FailedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.horizon.dashboard.access.test_access import client_for
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def drain():
    Worker(redis_driver("redis"), WorkerOptions(queues=("default", "high"), stop_when_empty=True,
                                                sleep=0, quiet=True, memory=0),
           stderr=io.StringIO()).run()


def pages():
    client = client_for(User.objects.create_superuser("root", password="pw"))
    return (client.get(reverse("horizon:jobs", args=["completed"])).content.decode(),
            client.get(reverse("horizon:silenced")).content.decode(), client)


def test_a_silenced_job_is_on_the_silenced_list_not_the_completed_one(rclient):
    quiet = jobs.quiet_ping.delay("shh")
    by_class = jobs.QuietReport.delay("shh too")
    loud = jobs.record.delay("heard")
    drain()
    assert [item["uuid"] for item in recent.completed(rclient)] == [loud]
    assert recent.count(rclient) == 1
    assert {item["uuid"] for item in recent.completed(rclient, silenced=True)} == {quiet, by_class}
    assert recent.count(rclient, silenced=True) == 2
    completed, silenced, client = pages()
    assert loud in completed and quiet not in completed and by_class not in completed
    assert quiet in silenced and by_class in silenced and loud not in silenced
    assert "2 silenced jobs completed" in silenced
    assert reverse("horizon:silenced") in completed  # the nav links it
    job_page = client.get(reverse("horizon:job", args=["silenced", quiet]))
    assert job_page.status_code == 200 and "quiet_ping" in job_page.content.decode()
    # still counted: throughput and runtime
    count, runtime = metrics.current(rclient, "job", ["tests.testapp.silenced_jobs.quiet_ping"])[
        "tests.testapp.silenced_jobs.quiet_ping"]
    assert count == 1 and runtime > 0
    assert metrics.jobs_since(rclient, 0) == 3


def test_silenced_by_name_and_by_tag_settings(rclient, settings):
    settings.HORIZON = {**settings.HORIZON, "silenced": ["tests.testapp.jobs.noop"],
                        "silenced_tags": ["heartbeat"]}
    by_name = jobs.noop.delay(1)
    by_tag = jobs.record.using(tags=["heartbeat", "x"]).delay("beat")
    loud = jobs.record.using(tags=["x"]).delay("heard")
    drain()
    assert [item["uuid"] for item in recent.completed(rclient)] == [loud]
    assert {item["uuid"] for item in recent.completed(rclient, silenced=True)} == {by_name, by_tag}


def test_a_silenced_job_that_fails_is_a_failure_like_any_other(rclient):
    uuid = jobs.quiet_but_failing.delay("loud failure")
    drain()
    assert FailedJob.objects.filter(uuid=uuid).exists()
    assert recent.count(rclient, silenced=True) == 0 and recent.count(rclient) == 0
    client = client_for(User.objects.create_superuser("root", password="pw"))
    assert uuid in client.get(reverse("horizon:failed")).content.decode()


def test_the_silenced_settings_are_checked():
    errors = settings_errors({"silenced": "tests.testapp.jobs.noop", "silenced_tags": [1]})
    assert [e.check_id for e in errors] == ["horizon.E019", "horizon.E019"]
    assert "list of non-empty strings" in str(errors[0])
    assert settings_errors({"silenced": ["a.b"], "silenced_tags": ["t"]}) == []


def test_silenced_must_be_a_boolean():
    from queueing import job
    from queueing.errors import InvalidOption

    with pytest.raises(InvalidOption, match="silenced must be True or False"):
        job(silenced="yes")(lambda: None)
