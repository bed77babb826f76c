"""Model arguments on the database driver, and a row read from the database it came
from: a user saved on PostgreSQL travels with ``"db": "pg"`` and is read there, whatever
database the job's own queue uses."""
import io
import json

import pytest
from django.contrib.auth.models import User

from queueing import connections
from queueing.models import FailedJob, QueuedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def drain(conn) -> str:
    out = io.StringIO()
    opts = WorkerOptions(connection=conn, queues=("default",), stop_when_empty=True, sleep=0,
                         memory=0)
    assert Worker(connections.driver(conn), opts, stdout=out, stderr=io.StringIO()).run() == 0
    return out.getvalue()


def test_a_reference_names_its_database_and_is_read_there(dbconn):
    if "pg" not in WORKER_DATABASES:
        pytest.skip("needs the PostgreSQL test database")
    on_pg = User.objects.using("pg").create(username="pg-user")
    on_default = User.objects.create(username="default-user")
    jobs.greet_many.using(connection=dbconn).delay([on_pg, on_default], {})
    [row] = QueuedJob.objects.using(connections.driver(dbconn).alias).all()
    payload = json.loads(row.payload)
    assert [ref["db"] for ref in payload["args"][0]] == ["pg", "default"]
    assert "pg-user" not in row.payload and "default-user" not in row.payload
    User.objects.using("pg").filter(pk=on_pg.pk).update(username="pg-renamed")
    drain(dbconn)
    [note] = jobs.notes()
    assert [u["username"] for u in note["users"]] == ["pg-renamed", "default-user"]
    gone = User.objects.using("pg").create(username="gone")
    uuid = jobs.greet_user.using(connection=dbconn).delay(gone)
    gone_pk = gone.pk
    User.objects.using("pg").filter(pk=gone_pk).delete()
    drain(dbconn)
    failed = FailedJob.objects.get(uuid=uuid)
    assert f"auth.User {gone_pk} no longer exists in database 'pg'" in failed.exception
