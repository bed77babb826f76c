"""In headless Chromium: an open page says so when Redis stops answering (the stale-data
banner, the last good time), and a full load answers 503 with the reason."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_open_page_shows_the_stale_banner_and_a_load_gets_the_503_page(page, operator,
                                                                          own_redis):
    log_in(page, next_path="/jobs/pending/")
    expect(page.locator("#stale")).to_be_hidden()
    own_redis.stop()
    banner = page.locator("#stale")
    expect(banner).to_be_visible(timeout=8_000)
    expect(banner).to_contain_text("Could not refresh: Redis is unreachable")
    expect(banner).to_contain_text("What you see is from")
    expect(page.locator("#job-list")).to_have_class("panel is-stale")
    response = page.goto("/jobs/pending/")
    assert response.status == 503
    expect(page.locator("h1")).to_have_text("Redis is not answering")
    expect(page.locator("main")).to_contain_text("Redis is unreachable")
