"""docs/monitoring.md's example, run as written on a real worker process: its jobs are
declared by tests/testapp/jobs.py from the ``doc-example`` block, its ``doc-dispatch``
block runs here."""
import re
from pathlib import Path

import pytest

from horizon.monitor_recording import watched_tags
from horizon.repositories import monitored, recent
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
DOC = Path(__file__).resolve().parents[2] / "docs" / "monitoring.md"


def test_the_monitoring_example_runs_as_written(spawn_worker, rclient):
    watched_tags.forget()
    [dispatch] = re.findall(r"<!-- doc-dispatch -->\s*```python\n(.*?)```", DOC.read_text(),
                            re.S)
    exec(compile(dispatch, str(DOC), "exec"), dict(vars(jobs)))
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait(timeout=60) == 0, worker.output()
    [row] = monitored.jobs(rclient, "customer:42")
    assert (row["name"], row["status"]) == ("tests.testapp.jobs.charge_customer", "completed")
    assert monitored.summaries(rclient) == [("customer:42", 1, 0)]
    assert [item["name"] for item in recent.completed(rclient, silenced=True)] == [
        "tests.testapp.jobs.refresh_cache"]
    assert [item["name"] for item in recent.completed(rclient)] == [
        "tests.testapp.jobs.charge_customer"] * 2
    watched_tags.forget()
