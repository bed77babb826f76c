"""Tasks across processes: enqueued here, run by a real ``runworker``, read back here.

``tests/testapp/tasks.py`` is written as an existing Django app writes its tasks, with
nothing of ours in it: this is that code running on our queue and dashboard.
"""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from queueing.tasks.framework import PRIMARY as FW
from tests.helpers import run_async, task_finished
from tests.testapp import tasks
from tests.testapp.task_signals import recorded
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
Status = FW.TaskResultStatus
BACKEND = "queueing.tasks.backend.RedisBackend"




def test_enqueue_here_run_there_get_result_here(spawn_worker):
    worker = spawn_worker("--queue=high,default")
    added = tasks.add.enqueue(2, 3)
    shouted = tasks.shout.enqueue("hi")
    doubled = run_async(tasks.async_double.aenqueue(21))  # an async function, enqueued async
    wait_until(task_finished(added), message="add to finish")
    wait_until(task_finished(shouted), message="shout to finish")
    wait_until(task_finished(doubled), message="async_double to finish")
    fetched = run_async(tasks.async_double.aget_result(doubled.id))
    assert fetched.status == Status.SUCCESSFUL and fetched.return_value == 42
    assert added.status == Status.SUCCESSFUL and added.return_value == 5
    assert shouted.return_value == "HI" and shouted.task.queue_name == "high"
    [worker_id] = added.worker_ids
    assert f":{worker.pid}:" in worker_id
    fresh = FW.task_backends["default"].get_result(added.id)  # a new read, same answer
    assert fresh.status == Status.SUCCESSFUL and fresh.return_value == 5
    in_worker = [(s["signal"], s["sender"], s["status"]) for s in recorded()
                 if s["id"] == added.id and s["pid"] == worker.pid]
    assert in_worker == [("task_started", BACKEND, "RUNNING"),
                         ("task_finished", BACKEND, "SUCCESSFUL")]
    here = [s for s in recorded() if s["id"] == added.id and s["pid"] != worker.pid]
    assert [(s["signal"], s["sender"], s["status"]) for s in here] == \
        [("task_enqueued", BACKEND, "READY")]


def test_context_attempts_and_errors_across_processes(spawn_worker):
    spawn_worker("--tries=3")
    result = tasks.with_context.enqueue(fail_times=1)
    wait_until(task_finished(result), message="with_context to finish")
    assert result.status == Status.SUCCESSFUL and result.return_value == 2
    assert len(result.worker_ids) == 2
    [error] = result.errors
    assert error.exception_class_path == "builtins.RuntimeError"
    assert "attempt 1 fails" in error.traceback
    started = [s["worker_ids"] for s in recorded() if s["signal"] == "task_started"]
    assert [len(ids) for ids in started] == [1, 2]  # appended before the function ran


def test_a_task_run_by_runworker_shows_on_the_dashboard(spawn_worker):
    spawn_worker()
    done = tasks.add.enqueue(40, 2)
    failed = tasks.explode.enqueue("on the page")
    wait_until(task_finished(done), message="add to finish")
    wait_until(task_finished(failed), message="explode to fail")
    assert done.status == Status.SUCCESSFUL and failed.status == Status.FAILED
    assert failed.errors[0].exception_class_path == "builtins.ValueError"
    assert "ValueError: on the page" in failed.errors[0].traceback
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))

    page = client.get(f"/jobs/completed/{done.id}/").content.decode()
    assert "Task result" in page and "SUCCESSFUL" in page
    assert "tests.testapp.tasks.add" in page
    assert '<pre class="code task-return">42</pre>' in page

    page = client.get(f"/jobs/failed/{failed.id}/").content.decode()
    assert "Task result" in page and "FAILED" in page
    assert "builtins.ValueError" in page and "ValueError: on the page" in page


def test_a_deferred_tasks_result_keeps_run_after_once_it_has_run(spawn_worker):
    """Issue 32: the worker rebuilt the result record from the payload, without
    run_after, so a deferred task's result lost it once the task ran."""
    import datetime as dt

    from django.utils import timezone

    run_after = timezone.now() + dt.timedelta(seconds=1)
    deferred = tasks.add.using(run_after=run_after).enqueue(1, 1)
    assert deferred.task.run_after == run_after
    spawn_worker("--queue=high,default")
    wait_until(task_finished(deferred), timeout=20, message="the deferred task to finish")
    fresh = FW.task_backends["default"].get_result(deferred.id)
    assert fresh.status == Status.SUCCESSFUL and fresh.task.run_after == run_after


def test_a_task_reports_progress_and_the_backend_reads_it(spawn_worker):
    """Issue 34: Django's TaskResult has no field for progress; the backend answers it."""
    worker = spawn_worker("--queue=default")
    result = tasks.counts_rows.enqueue(40)
    wait_until(task_finished(result), message="counts_rows to finish")
    assert result.status == Status.SUCCESSFUL and result.return_value == 40
    # the last report is written before the task's result (docs/progress-and-expiry.md):
    # a caller that sees SUCCESSFUL reads it at once, no wait
    report = FW.task_backends["default"].get_progress(result.id)
    assert report is not None
    assert (report.fraction, report.message, report.meta) == (1.0, "row 40", {"rows": 40})
    # in the worker, task_finished (sent once the result is stored, before the worker
    # settles the job) already finds the last report kept. It is sent after the result is
    # stored, so a test that saw SUCCESSFUL may read the signals before the worker's
    # receiver wrote its note (seen under load on 2 CPUs): wait for the note itself.

    def finished_notes() -> list[dict]:
        return [s for s in recorded() if s["id"] == result.id and
                s["signal"] == "task_finished" and s["pid"] == worker.pid]

    wait_until(finished_notes, timeout=10, message="the worker's task_finished note")
    [finished] = finished_notes()
    assert finished["kept_progress"] == 1.0
    assert FW.task_backends["default"].get_progress("no-such-result") is None
