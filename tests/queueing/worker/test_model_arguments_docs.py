"""docs/model-arguments.md's example, run on a real worker as written: its jobs are
declared by tests/testapp/jobs.py from the doc's ``doc-example`` block, and its dispatch
block (``doc-dispatch``) runs here; then what the page says happens, happens."""
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from queueing.connections import redis_driver
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
DOC = Path(__file__).resolve().parents[3] / "docs" / "model-arguments.md"


def test_the_model_arguments_example_runs_as_written(spawn_worker):
    alice = User.objects.create_user("alice", "alice@example.com")
    bob = User.objects.create_user("bob", "bob@example.com")
    [dispatch] = re.findall(r"<!-- doc-dispatch -->\s*```python\n(.*?)```", DOC.read_text(),
                            re.S)
    exec(compile(dispatch, str(DOC), "exec"), {**vars(jobs), "User": User})
    queued = [json.loads(raw) for raw in redis_driver("redis").client.lrange(
        QueueKeys.for_queue("default").ready, 0, -1)]
    assert [p["models"] for p in queued] == [1, 3, 1, 1]
    assert [p["tags"] for p in queued] == [
        [f"auth.User:{alice.pk}"], [f"auth.User:{alice.pk}", f"auth.User:{bob.pk}"],
        [f"auth.User:{bob.pk}"], []]
    assert not any(b"example.com" in raw for raw in redis_driver("redis").client.lrange(
        QueueKeys.for_queue("default").ready, 0, -1))
    User.objects.filter(pk=alice.pk).update(username="alice-renamed")  # after the dispatch
    bob_pk = bob.pk
    bob.delete()

    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(timeout=60) == 0, worker.output()
    alice.refresh_from_db()
    assert alice.last_name == "welcomed as alice-renamed"  # the row as it was at run time
    [failed] = FailedJob.objects.all()
    assert failed.job == jobs.notify_team.name
    assert f"MissingModel: auth.User {bob_pk} no longer exists" in failed.exception
    output = worker.output()
    assert output.count("DROPPED") == 1 and "CloseAccount" in output
