"""Celery's and RQ's spellings, refused with ours named (issue 50, item 3;
queueing/entries/spellings.py)."""
import datetime as dt
import decimal
import uuid

import pytest

from queueing import Job, job
from queueing.errors import InvalidOption, NotSerializable
from tests.testapp.jobs import record


def test_job_retries_says_did_you_mean_tries():
    with pytest.raises(InvalidOption, match=r"'retries'.*here write tries=N"):
        job(retries=3)(lambda: None)
    with pytest.raises(InvalidOption, match=r"'result_ttl'.*keep_result=seconds"):
        job(result_ttl=60)(lambda: None)
    with pytest.raises(InvalidOption, match=r"'tris' \(did you mean 'tries'\?\)"):
        job(tris=3)(lambda: None)
    with pytest.raises(InvalidOption, match=r"'countdown'.*delay=seconds"):
        record.using(countdown=5)


def test_a_job_class_with_celerys_attributes_is_refused_with_the_fix():
    with pytest.raises(InvalidOption, match=r"SendMail.max_retries is Celery's.*tries=N"):
        class SendMail(Job):
            max_retries = 3

            def handle(self):
                pass


def test_a_job_class_without_handle_is_refused_with_the_fix():
    with pytest.raises(InvalidOption, match=r"Report has no handle\(\) method.*run\(\)"):
        class Report(Job):
            def run(self):
                pass


def test_an_abstract_job_class_needs_no_handle():
    class Base(Job):
        abstract = True

    assert Base._definition is None


@pytest.mark.parametrize(("value", "hint"), [
    (decimal.Decimal("9.99"), r"pass str\(value\).*Decimal\(text\)"),
    (uuid.UUID(int=7), r"pass str\(value\).*UUID\(text\)"),
    (dt.datetime(2026, 1, 1, tzinfo=dt.UTC), r"isoformat\(\)"),
    (dt.date(2026, 1, 1), r"isoformat\(\)"),
])
def test_decimal_uuid_and_datetime_arguments_get_a_hint(value, hint):
    with pytest.raises(NotSerializable, match=rf"argument 'amount'.*{hint}"):
        record.delay("x", amount=value)


def test_a_tasks_json_error_names_the_argument():
    tasks = pytest.importorskip("tests.testapp.tasks")
    with pytest.raises(TypeError, match=r"argument 1 is a decimal.Decimal.*str\(value\)"):
        tasks.add.enqueue(1, decimal.Decimal("2"))
