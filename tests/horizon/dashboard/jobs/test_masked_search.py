"""Issue 26, item 2: the failed-jobs search cannot reveal a masked value, more credential
shapes are masked, and failed Django Tasks log their traceback masked. Real Redis, real
SQLite, a real worker process."""
import string
import uuid as uuid_lib

import pytest
from django.test import Client

from queueing.entries.payload import encode
from queueing.models import FailedJob
from queueing.observability import redaction
from queueing.state import failed as failed_store
from tests.helpers import client_with, payload, task_finished
from tests.testapp import tasks
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
ALPHABET = string.ascii_letters + string.digits + "-_"


def viewer() -> Client:
    return client_with("view_dashboard", username="viewer")


def record_failure(exception: str) -> str:
    data = payload()
    failed_store.record(connection="redis", queue="default", raw=encode(data),
                        exception=exception, job_uuid=data["uuid"], job_name=data["job"])
    return data["uuid"]


def hits(client: Client, needle: str, uuid: str) -> bool:
    response = client.get("/failed/", {"q": needle})
    assert response.status_code == 200
    return uuid in response.content.decode()


def recover(client: Client, known: str, uuid: str, longest: int = 12) -> str:
    """The probe of the review: extend a known prefix one character at a time."""
    found = known
    while len(found) < len(known) + longest:
        for char in ALPHABET:
            if hits(client, found + char, uuid):
                found += char
                break
        else:
            return found
    return found


def test_a_viewer_cannot_recover_a_masked_password_by_searching(rclient):
    uuid = record_failure("RuntimeError: login failed with password=hunter2 for ops")
    client = viewer()
    assert hits(client, "login failed", uuid), "the search still finds ordinary text"
    assert recover(client, "password=", uuid) == "password="
    assert not hits(client, "hunter2", uuid)
    assert "hunter2" not in FailedJob.objects.get(uuid=uuid).exception


def test_a_viewer_cannot_recover_a_redis_password_by_searching(rclient):
    uuid = record_failure("ConnectionError: redis://:s3cretRedis@cache:6379/0 refused")
    client = viewer()
    assert recover(client, "redis://:", uuid) == "redis://:"
    assert not hits(client, "s3cret", uuid)


def test_rows_stored_raw_before_the_upgrade_are_masked_by_the_migration(rclient):
    import importlib

    from django.apps import apps as global_apps
    from django.db import connection

    migration = importlib.import_module("queueing.migrations.0003_mask_failed_exceptions")
    uuid = str(uuid_lib.uuid4())
    FailedJob.objects.create(uuid=uuid, connection="redis", queue="default", job="x",
                             payload="{}", exception="E: token=raw-secret-value")
    migration.mask_existing(global_apps, type("E", (), {"connection": connection})())
    assert "raw-secret-value" not in FailedJob.objects.get(uuid=uuid).exception


@pytest.mark.parametrize("secret", [
    "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A", "ghp_" + "a1B2" * 9,
    "github_pat_" + "x" * 30, "xoxb-1234567890-abcdefghij", "sk_live_" + "4eC39HqLyjWD",
    "AIza" + "S" * 35, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fw",
])
def test_credential_shapes_are_masked(secret):
    text = f"upload failed ({secret}) after retry"
    masked = redaction.mask_text(text)
    assert secret not in masked and "upload failed (" in masked and ") after retry" in masked


def test_a_private_key_block_is_masked():
    text = ("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\nAAAA\n"
            "-----END OPENSSH PRIVATE KEY-----\nnext line")
    masked = redaction.mask_text(text)
    assert "b3BlbnNzaC1rZXktdjEA" not in masked and "next line" in masked


def test_a_failed_task_logs_its_traceback_masked(spawn_worker):
    worker = spawn_worker()
    result = tasks.explode.enqueue("db login refused: password=tasks-hunter2 AKIAIOSFODNN7EXAMPLE")
    wait_until(task_finished(result), message="explode to finish")
    wait_until(lambda: "explode" in worker.output() and "Traceback" in worker.output(),
               message="the task's traceback in the worker's output")
    output = worker.output()
    assert "tasks-hunter2" not in output and "AKIAIOSFODNN7EXAMPLE" not in output
    assert "ValueError" in output


@pytest.mark.parametrize("state", ["pending", "delayed", "completed"])
def test_a_viewer_cannot_recover_a_masked_tag_from_a_job_list(rclient, driver, state):
    """Issue 48: the job lists' text search matched raw tags, so a masked
    ``password=...`` tag was recovered one character at a time (145 requests)."""
    import time

    from tests.helpers import complete, later, push

    tags = ["password=hunter2", "tenant:acme"]
    if state == "pending":
        uuid = push(driver, tags=tags)["uuid"]
    elif state == "delayed":
        uuid = later(driver, time.time() + 600, tags=tags)["uuid"]
    else:
        uuid = complete(rclient, tags=tags)["uuid"]
    client = viewer()

    def listed(needle):
        response = client.get(f"/jobs/{state}/", {"q": needle})
        assert response.status_code == 200
        return uuid in response.content.decode()

    assert listed("tenant:ac"), "the search still finds a tag as shown"
    assert listed("password="), "and the part of a masked tag a viewer can read"
    assert not listed("password=h")
    found = "password="  # the review's probe: extend one character at a time
    for char in ALPHABET:
        if listed(found + char):
            found += char
            break
    assert found == "password=" and not listed("hunter2")
