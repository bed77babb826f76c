"""Issue 31, item 4, in headless Chromium: the overview of a stalled queue shows its
wait (never "—"), and draining workers are shown as draining."""
import time

import pytest
from playwright.sync_api import expect

from horizon.repositories import state
from tests.browser.conftest import log_in
from tests.helpers import publish, push

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("one_queue")]


def test_a_stalled_queue_shows_its_wait_and_draining_workers_show(page, operator, driver,
                                                                 rclient):
    publish(rclient, processes={"default": 1})
    sup = state.supervisors(rclient)[0]
    sup.draining = 2
    state.publish_supervisor(rclient, sup)
    for _ in range(10):  # ten jobs behind one long one for five minutes; none finished
        push(driver, pushedAt=time.time() - 300)
    log_in(page)
    row = page.locator("#overview tbody tr", has_text="default").first
    wait = row.locator("td[data-label=Wait]")
    expect(wait).to_contain_text("5 min")
    expect(page.locator(".card", has_text="Max wait time")).to_contain_text("5 min")
    expect(page.locator(".card", has_text="Total processes")).to_contain_text("+ 2 draining")
    page.goto("/workers/")
    expect(page.locator("#workers")).to_contain_text("2 draining")
