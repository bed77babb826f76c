"""A retried job that fails again at once keeps its failed record (issue 32): the retry
deletes the old row in the step that pushes the job, so the worker's new record lands
after it, never before (the old order, push then delete, wiped 12 records in 105)."""
import pytest

from horizon.dashboard.failed import failures
from queueing.models import FailedJob
from queueing.state import failed
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
COUNT = 100


def test_a_hundred_immediate_re_failures_after_retry_each_keep_a_record(spawn_worker):
    for i in range(COUNT):
        jobs.explode.delay(f"job-{i}")
    spawn_worker("--queue=default", "--sleep=0.01")
    wait_until(lambda: FailedJob.objects.count() == COUNT, 30, message="first failures")
    for row in list(FailedJob.objects.all()):
        failed.retry(row)  # the worker is waiting: it takes the job at once
    wait_until(lambda: len(jobs.notes()) == 2 * COUNT, 30, message="second runs")
    wait_until(lambda: FailedJob.objects.count() == COUNT, 10,
               message=f"{COUNT} records (found {FailedJob.objects.count()})")


def test_retry_matching_keeps_the_records_of_immediate_re_failures(spawn_worker):
    for i in range(COUNT):
        jobs.explode.delay(f"job-{i}")
    spawn_worker("--queue=default", "--sleep=0.01")
    wait_until(lambda: FailedJob.objects.count() == COUNT, 30, message="first failures")
    retried, skipped, kept = failures.retry_rows(FailedJob.objects.all())
    assert (len(retried), skipped, kept) == (COUNT, 0, 0)
    wait_until(lambda: len(jobs.notes()) == 2 * COUNT, 30, message="second runs")
    wait_until(lambda: FailedJob.objects.count() == COUNT, 30,
               message=f"{COUNT} records (found {FailedJob.objects.count()})")
