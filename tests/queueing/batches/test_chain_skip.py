"""Issue 32: a batch member that is a chain settles when a link before its last is
skipped by its own middleware (the chain ends there; docs/batches.md: a member skipped
by its middleware counts as succeeded), so the batch finishes and runs then/finally,
on Redis (a real worker process) and on the database driver."""
import pytest

from queueing import Batch, batch
from tests.conftest import WORKER_DATABASES
from tests.helpers import batch_ends, batch_finished, callbacks, drain_database, workers
from tests.testapp.control_jobs import skippable
from tests.testapp.jobs import BATCH_RAN, batch_callback, batch_member, notes
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def test_a_chain_member_skipped_before_its_last_link_settles_on_redis(spawn_worker):
    found = (batch([skippable.s("first", True), batch_member.s("never")],
                   batch_member.s("plain"))
             .then(batch_callback.s("then")).finally_(batch_callback.s("finally"))
             .dispatch())
    workers(spawn_worker, 1)
    done = wait_until(batch_finished(found.id, "then", "finally"), timeout=30,
                      message="the batch to finish and run then/finally")
    assert (done.pending, done.succeeded, done.failed) == (0, 2, 0)
    assert [n["label"] for n in notes(BATCH_RAN)] == ["plain"], "the chain ended at the skip"
    assert len(callbacks("then")) == 1 and len(callbacks("finally")) == 1


def test_a_chain_member_skipped_before_its_last_link_settles_on_the_database(dbconn):
    found = (batch([skippable.s("first", True).using(connection=dbconn),
                    batch_member.s("never").using(connection=dbconn)],
                   batch_member.s("plain").using(connection=dbconn))
             .then(batch_callback.s("then")).finally_(batch_callback.s("finally"))
             .using(connection=dbconn).dispatch())
    drain_database(dbconn)
    done = Batch.find(found.id, dbconn)
    assert done.finished and (done.pending, done.succeeded, done.failed) == (0, 2, 0)
    assert len(batch_ends("then")) == 1 and len(batch_ends("finally")) == 1
