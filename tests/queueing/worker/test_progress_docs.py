"""docs/progress-and-expiry.md's examples, run on a real worker: what the page says
they do is what they do (its job blocks are declared by tests/testapp/jobs.py)."""
import datetime as dt
import time

import pytest

from queueing import progress_of
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_progress_examples(spawn_worker):
    uuid = jobs.import_rows.delay(500)
    crawled = jobs.crawl.delay(20)
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    report = progress_of(uuid)
    assert (report.fraction, report.percent, report.message, report.meta) == (
        1.0, 100, "row 500 of 500", {"rows": 500})
    assert report.running is False and report.time_left() is None
    report = progress_of(crawled)
    assert (report.percent, report.message, report.meta) == (100, "page 20", {"pages": 20})


def test_the_expiry_examples(spawn_worker):
    jobs.refresh_quote.delay("ACME")
    jobs.refresh_quote.using(expires=dt.timedelta(seconds=0.3)).delay("LATE")
    time.sleep(0.5)
    worker = spawn_worker("--queue=default", "--stop-when-empty")
    assert worker.wait() == 0
    output = worker.output()
    assert output.count("DONE") == 1 and output.count("EXPIRED") == 1
