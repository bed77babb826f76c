"""Issue 31 (smaller points): on a batch's page an operator can find a pending member
(by its job name, uuid or tag, among that batch's members only), and a callback that
can no longer run says so and why instead of "not yet". Django test client, real Redis."""
import html
import re

import pytest
from django.test import Client

from queueing import batch
from queueing.connections import redis_driver
from tests.helpers import client_with, settle_ready
from tests.testapp.jobs import batch_callback, batch_member

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def viewer() -> Client:
    return client_with("view_dashboard")


def text(response) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())))


def test_a_pending_member_is_found_by_uuid_among_its_batch_only(viewer):
    other = batch(batch_member.s(0)).name("other").dispatch()
    found = batch(*[batch_member.s(i) for i in range(30)]).name("big").dispatch()
    members = [raw for raw in redis_driver("redis").pending("default", 0, -1)]
    uuids = [re.search(rb'"uuid":"([^"]+)"', raw).group(1).decode() for raw in members]
    wanted = uuids[-1]  # the batch's last member, at the queue's tail
    page = viewer.get(f"/batches/{found.id}/", {"q": wanted[:13]}).content.decode()
    link = re.search(rf'href="(/jobs/pending/{wanted}/[^"]*)"', page).group(1)
    assert viewer.get(html.unescape(link)).status_code == 200
    assert page.count('class="batch-member"') == 1
    page = viewer.get(f"/batches/{found.id}/", {"q": "batch_member"}).content.decode()
    assert page.count('class="batch-member"') == 30  # its 30, not the other batch's one
    assert uuids[0] not in page  # uuids[0] is the other batch's member
    assert other.id != found.id
    assert "No pending member matches" in text(
        viewer.get(f"/batches/{found.id}/", {"q": "nothing-like-it"}))


def test_callbacks_that_can_no_longer_run_say_so(viewer):
    ok = (batch(batch_member.s(1)).then(batch_callback.s("then"))
          .catch(batch_callback.s("catch")).finally_(batch_callback.s("finally"))
          .name("ok").dispatch())
    before = text(viewer.get(f"/batches/{ok.id}/"))
    assert "then: not yet" in before and "catch: not yet" in before
    settle_ready(1)
    after = text(viewer.get(f"/batches/{ok.id}/"))
    assert "then: dispatched" in after and "finally: dispatched" in after
    assert "catch: will not run (no job failed)" in after


def test_then_after_a_failure_and_catch_with_failures_allowed(viewer):
    bad = (batch(batch_member.s(1), batch_member.s(2)).then(batch_callback.s("then"))
           .catch(batch_callback.s("catch")).name("bad").dispatch())
    settle_ready(1, outcome="f")
    shown = text(viewer.get(f"/batches/{bad.id}/"))
    assert "then: will not run (the batch was cancelled)" in shown
    assert "catch: dispatched" in shown
    lenient = (batch(batch_member.s(3)).catch(batch_callback.s("catch"))
               .allow_failures().name("lenient").dispatch())
    assert "catch: will not run (failures are allowed)" in text(
        viewer.get(f"/batches/{lenient.id}/"))
