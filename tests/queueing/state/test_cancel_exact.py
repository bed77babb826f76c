"""Issue 32: queue_cancel takes one exact uuid ('*' was read as a Redis pattern and
reported as sent), and a cancel request expires: a retry clears it, and one older than
CANCEL_TTL is ignored and dropped, so it can never stop a later run. Real Redis."""
import json
import time

import pytest
from django.core.management import CommandError, call_command

from queueing.drivers import cancel_requests
from queueing.drivers.redis import control
from queueing.entries.payload import encode
from queueing.state import failed
from queueing.state.cancel import cancel_running
from tests.helpers import fail, payload

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("uuid", ["*", "*-*", "a?c", "[ab]*"])
def test_cancel_refuses_a_pattern(driver, rclient, uuid):
    running = payload()
    driver.push("default", encode(running))
    driver.pop("default")  # reserved: a worker holds it, as far as cancel can tell
    with pytest.raises(CommandError, match="not a job id"):
        call_command("queue_cancel", uuid, "--wait=0")
    assert cancel_running("redis", uuid, ["default"], by="t").state == "invalid"
    assert rclient.hlen(control.cancel_key()) == 0


def test_an_old_request_is_ignored_and_dropped(driver, rclient):
    rclient.hset(control.cancel_key(), "job-old", json.dumps(
        {"by": "x", "reason": "", "at": time.time() - cancel_requests.CANCEL_TTL - 1}))
    driver.request_cancel("job-new", "y")
    assert set(driver.cancel_requests(["job-old", "job-new"])) == {"job-new"}
    assert not rclient.hexists(control.cancel_key(), "job-old")


def test_a_retry_clears_a_request_left_from_the_last_run(driver, rclient):
    row = fail()
    driver.request_cancel(row.uuid, "dashboard:ops")  # landed as the job ended on its own
    failed.retry(row)
    assert driver.cancel_requests([row.uuid]) == {}
