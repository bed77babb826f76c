"""Issue 31, item 2, in headless Chromium: one refresh model for every live page.

A refresh already in flight when the pointer arrives is dropped; a touch holds on a
phone; Running now and Locks hold and pause like the lists; the focus stays where it
was on a summary page; the stale banner (UTC clock, the server's reason) clears on the
next good refresh after a Redis stall; a skip link leads to the content.
"""
import copy
import re
import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.helpers import push
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("one_queue")]


def held_polls(page, path_part: str, held: list):
    """Hold the region's polls at the network: each is fetched from the real server
    (real Redis) at once, and answered to the page only when the test says so."""
    def handle(route):
        if route.request.headers.get("hx-request") != "true":
            route.continue_()
            return
        held.append((route, route.fetch()))
    page.route(re.compile(path_part), handle)


def test_a_refresh_in_flight_when_the_pointer_arrives_is_dropped(page, operator, driver):
    push(driver, name="app.jobs.First")
    log_in(page, next_path="/jobs/pending/")
    expect(page.locator("#job-list")).to_contain_text("First")
    page.mouse.move(5, 5)
    held: list = []
    push(driver, name="app.jobs.Second")
    held_polls(page, r"/jobs/pending/\?", held)
    deadline = time.monotonic() + 5
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "a poll went out"
    row = page.locator("#job-list tbody tr").first
    box = row.bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + box["height"] / 2)  # while it is in flight
    page.wait_for_timeout(100)
    for route, response in held:  # now its answer (with Second in it) lands
        route.fulfill(response=response)
    page.wait_for_timeout(1000)
    expect(page.locator("#job-list")).not_to_contain_text("Second")
    expect(page.locator("#live-state")).to_have_text("Held: the pointer is on it")
    page.unroute(re.compile(r"/jobs/pending/\?"))
    page.mouse.move(5, 5)
    expect(page.locator("#job-list")).to_contain_text("Second", timeout=6_000)


def test_a_touch_holds_the_list_on_a_phone(browser, live_server, operator, driver):
    push(driver, name="app.jobs.First")
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  base_url=live_server.url, is_mobile=True, has_touch=True)
    try:
        tab = context.new_page()
        log_in(tab, next_path="/jobs/pending/")
        expect(tab.locator("#job-list")).to_contain_text("First")
        summary = tab.locator("#job-list .summary, #job-list header").first
        box = summary.bounding_box()
        tab.touchscreen.tap(box["x"] + 10, box["y"] + 5)
        push(driver, name="app.jobs.Second")
        tab.wait_for_timeout(3000)
        expect(tab.locator("#job-list")).not_to_contain_text("Second")
        expect(tab.locator("#live-state")).to_have_text("Held: you touched it")
        expect(tab.locator("#job-list")).to_contain_text("Second", timeout=8_000)
    finally:
        context.close()


def test_running_now_and_locks_hold_and_pause(page, operator, driver, rclient):
    log_in(page, next_path="/jobs/running/")
    expect(page.locator("#running")).to_contain_text("No job is running")
    page.get_by_role("button", name="Pause updates").click()
    page.mouse.move(5, 5)
    # a worker publishes a running job (the heartbeat's key and index, as a worker writes)
    from queueing.worker.heartbeat import Heartbeat
    heart = Heartbeat(rclient, "host:1:w", 5.0, lambda: {"concurrency": 1, "running": [
        {"uuid": "0d3c5a4e-0000-4000-8000-000000000001", "job": "app.jobs.Long",
         "queue": "default", "started": time.time()}]})
    heart.beat()
    page.wait_for_timeout(2500)
    expect(page.locator("#running")).to_contain_text("No job is running")
    expect(page.locator("#live-state")).to_have_text("Updates paused")
    page.get_by_role("button", name="Resume updates").click()
    page.mouse.move(5, 5)
    expect(page.locator("#running")).to_contain_text("app.jobs.Long", timeout=5_000)
    box = page.locator("#running tbody tr").first.bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
    heart.state = lambda: {"concurrency": 1, "running": []}
    heart.beat()
    page.wait_for_timeout(2500)
    expect(page.locator("#running")).to_contain_text("app.jobs.Long")  # held under the pointer
    expect(page.locator("#live-state")).to_have_text("Held: the pointer is on it")

    page.goto("/locks/")
    box = page.locator("#locks").bounding_box()
    page.mouse.move(box["x"] + 30, box["y"] + 30)
    page.wait_for_timeout(2500)
    expect(page.locator("#live-state")).to_have_text("Held: the pointer is on it")
    page.get_by_role("button", name="Pause updates").click()
    page.mouse.move(5, 5)
    page.wait_for_timeout(2500)
    expect(page.locator("#live-state")).to_have_text("Updates paused")


def test_the_focus_stays_on_a_summary_page_and_the_skip_link(page, operator):
    log_in(page, next_path="/")
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.id") == "content"
    link = page.locator("#overview a").first
    link.focus()
    page.mouse.move(5, 5)
    page.wait_for_timeout(4500)  # two refresh periods
    focused = page.evaluate("""() => !!document.activeElement &&
        document.activeElement.isConnected &&
        document.getElementById('overview').contains(document.activeElement)""")
    assert focused, "the focus is still on the overview's link"


def test_the_stale_banner_clears_on_the_next_good_refresh(page, operator, settings):
    proxy = TcpProxy(upstream_unix=settings.QUEUE["connections"]["redis"]["url"]
                     .removeprefix("unix://").split("?")[0])
    config = copy.deepcopy(settings.QUEUE)
    config["connections"]["redis"]["url"] = proxy.url
    config["connections"]["redis"]["options"] = {"socket_timeout": 1.5}
    settings.QUEUE = config
    try:
        log_in(page, next_path="/jobs/pending/")
        page.mouse.move(5, 5)
        expect(page.locator("#stale")).to_be_hidden()
        proxy.freeze()  # a stall: Redis neither answers nor fails
        banner = page.locator("#stale")
        expect(banner).to_be_visible(timeout=10_000)
        text = banner.inner_text()
        # the server's reason, not the browser's own timeout
        assert "Redis did not answer in time" in text and "took too long" not in text, text
        assert re.search(r"What you see is from \d\d:\d\d:\d\d UTC", text), text
        expect(page.locator("#live-state")).not_to_have_text("Live")
        proxy.thaw()
        expect(banner).to_be_hidden(timeout=10_000)
        expect(page.locator("#job-list")).not_to_have_class(re.compile("is-stale"))
        expect(page.locator("#live-state")).to_have_text("Live")
    finally:
        proxy.thaw()
        proxy.close()
