"""In headless Chromium: actions hit the job the operator aimed at.

A list that changes under the pointer does not refresh while the pointer, the focus or
a selection is in it; every confirm names the job (name, uuid, queue); ticked rows and
"select all N matching" act on exactly what the confirm counted; refreshes can be
paused; keyboard shortcuts and dark mode work.
"""
import json
import time

import pytest
from playwright.sync_api import expect

from queueing.models import FailedJob
from tests.browser.conftest import log_in
from tests.helpers import fail, push

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("one_queue")]


@pytest.fixture
def dialogs(page):
    seen: list[str] = []
    page.on("dialog", lambda dialog: seen.append(dialog.message))
    return seen


def pending_list(page, driver, count: int):
    """`count` pending jobs, and the Pending list showing them (logged in): (jobs, rows)."""
    jobs = [push(driver, name=f"app.jobs.Work{i}") for i in range(count)]
    log_in(page, next_path="/jobs/pending/")
    rows = page.locator("#job-list tbody tr")
    expect(rows).to_have_count(count)
    return jobs, rows


def pending_uuids(driver) -> list[str]:
    return [json.loads(raw)["uuid"] for raw in driver.pending("default", 0, -1)]


def test_delete_on_a_draining_list_hits_the_job_named_in_the_confirm(page, operator, driver,
                                                                    dialogs):
    jobs, rows = pending_list(page, driver, 20)
    aimed = rows.nth(4)
    aimed_uuid = aimed.get_attribute("data-uuid")
    assert aimed_uuid == jobs[4]["uuid"]
    delete = aimed.get_by_role("button", name="Delete")
    delete.hover()
    # Workers take three jobs from the head while the operator's pointer is on row 5.
    for _ in range(3):
        driver.client.lpop(driver.keys("default").ready)
    time.sleep(2.6)  # a poll comes due and is held back
    expect(page.locator("#live-state")).to_contain_text("Held: the pointer is on it")
    expect(rows).to_have_count(20)  # the rows did not shift under the pointer
    delete.click()
    expect(page.locator("#flash")).to_contain_text(f"Deleted pending job {aimed_uuid}")
    assert dialogs[-1] == (f"Delete pending job Work4 ({aimed_uuid}) from "
                           "redis:default? It will not run.")
    left = pending_uuids(driver)
    assert aimed_uuid not in left
    assert left == [j["uuid"] for j in jobs[3:] if j["uuid"] != aimed_uuid]


def test_retry_on_the_failed_list_asks_and_names_the_job(page, operator, driver, dialogs):
    target = fail(name="app.jobs.Invoice")
    fail(name="app.jobs.Other")
    log_in(page, next_path="/failed/")
    row = page.locator("#failed-list tbody tr", has_text=target.uuid)
    row.get_by_role("button", name="Retry").click()
    expect(page.locator("#flash")).to_contain_text("Retried app.jobs.Invoice")
    assert dialogs == [f"Retry failed job Invoice ({target.uuid}) on redis:default?"]
    assert pending_uuids(driver) == [target.uuid]


def test_ticked_rows_are_the_ones_acted_on_and_hold_the_refresh(page, operator, driver,
                                                                 dialogs):
    jobs, rows = pending_list(page, driver, 6)
    rows.nth(1).locator("input.pick").check()
    rows.nth(3).locator("input.pick").check()
    expect(page.locator("#job-list .selection-count")).to_have_text("2 selected.")
    page.mouse.move(5, 5)  # away from the list: the ticks alone hold the refresh
    driver.client.lpop(driver.keys("default").ready)  # the list drains under the ticks
    time.sleep(2.6)
    expect(page.locator("#live-state")).to_contain_text("rows are ticked")
    page.get_by_role("button", name="Delete selected").click()
    expect(page.locator("#flash")).to_contain_text("Deleted 2 pending jobs")
    question = dialogs[-1]
    assert question.startswith("Delete 2 pending jobs? They will not run.")
    assert jobs[1]["uuid"] in question and jobs[3]["uuid"] in question
    assert pending_uuids(driver) == [jobs[i]["uuid"] for i in (2, 4, 5)]


def test_select_all_matching_retries_exactly_the_counted_jobs(page, operator, driver,
                                                               dialogs):
    for i in range(60):
        fail(name="app.jobs.Invoice", exception=f"RuntimeError: boom {i}\n")
    others = [fail(name="app.jobs.Mail", exception="ValueError: bad address\n") for _ in range(3)]
    log_in(page, next_path="/failed/?q=boom")
    expect(page.locator("#failed-list tbody tr")).to_have_count(50)
    page.locator("#failed-list input.pick-page").check()
    expect(page.locator("#failed-list .selection-count")).to_have_text("50 selected (this page).")
    page.get_by_role("link", name="Select all 60 matching").click()
    expect(page.locator("#failed-list .selection-count")).to_have_text("All 60 matching selected.")
    # A job failing after the count was read is not swept in with the others.
    late = fail(name="app.jobs.Invoice", exception="RuntimeError: boom late\n")
    page.get_by_role("button", name="Retry selected").click()
    expect(page.locator("#flash")).to_contain_text("Retried 60 failed jobs matching “boom”")
    assert dialogs[-1] == "Retry all 60 failed jobs matching “boom”?"
    assert driver.sizes("default").pending == 60
    assert set(FailedJob.objects.values_list("uuid", flat=True)) == {
        late.uuid, *(o.uuid for o in others)}


def test_the_refresh_can_be_paused_and_resumed(page, operator, driver):
    log_in(page, next_path="/jobs/pending/")
    expect(page.locator("#job-list")).to_contain_text("No pending jobs")
    page.get_by_role("button", name="Pause updates").click()
    expect(page.locator("#live-state")).to_have_text("Updates paused")
    page.mouse.move(5, 5)
    push(driver, name="app.jobs.Arrived")
    time.sleep(2.6)
    expect(page.locator("#job-list")).to_contain_text("No pending jobs")
    page.reload()  # the choice is remembered
    expect(page.get_by_role("button", name="Resume updates")).to_be_visible()
    expect(page.locator("#job-list")).to_contain_text("Arrived")
    push(driver, name="app.jobs.Second")
    page.mouse.move(5, 5)
    time.sleep(2.6)
    expect(page.locator("#job-list")).not_to_contain_text("Second")
    page.get_by_role("button", name="Resume updates").click()
    page.mouse.move(5, 5)
    expect(page.locator("#job-list")).to_contain_text("Second", timeout=6_000)
    expect(page.locator("#live-state")).to_have_text("Live")


def test_keyboard_shortcuts(page, operator, driver, dialogs):
    rows_made = [fail(name=f"app.jobs.Job{i}") for i in range(3)]  # newest first: Job2, Job1, Job0
    log_in(page, next_path="/failed/")
    page.mouse.move(5, 5)
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()
    page.keyboard.press("j")
    page.keyboard.press("j")
    second = page.locator("#failed-list tbody tr").nth(1)
    expect(second).to_have_class("cursor")
    page.keyboard.press("d")
    expect(page.locator("#flash")).to_contain_text(f"Deleted failed job {rows_made[1].uuid}")
    assert dialogs[-1].startswith(f"Delete failed job Job1 ({rows_made[1].uuid})")
    page.keyboard.press("/")
    expect(page.locator("#filter-q")).to_be_focused()


def test_dark_mode_follows_the_system_and_has_a_toggle(page, operator):
    log_in(page)
    background = "getComputedStyle(document.body).backgroundColor"
    light = page.evaluate(background)
    page.get_by_role("button", name="Dark mode").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    dark = page.evaluate(background)
    assert dark != light and dark == "rgb(18, 20, 28)"
    page.get_by_role("button", name="Light mode").click()
    assert page.evaluate(background) == light
    page.evaluate("localStorage.removeItem('horizon:theme')")
    page.emulate_media(color_scheme="dark")
    page.reload()
    assert page.evaluate(background) == "rgb(18, 20, 28)"


def test_operations_pages_are_cards_on_a_phone(browser, live_server, operator, rclient,
                                               settings, screenshots):
    from tests.helpers import publish

    settings.HORIZON = {**settings.HORIZON, "schedule": [
        {"name": "tick", "job": "tests.testapp.jobs.record", "every": 60, "args": ["tick"],
         "queue": "default"}]}
    publish(rclient)
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  base_url=live_server.url, is_mobile=True, has_touch=True)
    try:
        tab = context.new_page()
        log_in(tab, next_path="/workers/")
        for path, button in (("/workers/", "Pause"), ("/schedules/", "Run schedule tick now"),
                             ("/metrics/", None), ("/audit/", None), ("/retries/", None)):
            tab.goto(path)
            width = tab.evaluate("() => document.documentElement.scrollWidth")
            overflowing = tab.evaluate("""() => [...document.querySelectorAll('.panel')]
                .filter(p => p.scrollWidth > p.clientWidth + 1).length""")
            assert width <= 390 and overflowing == 0, (path, width, overflowing)
            if button:
                target = tab.get_by_role("button", name=button).first
                target.scroll_into_view_if_needed()
                box = target.bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (path, box)
            tab.screenshot(path=str(screenshots / f"{path.strip('/')}-390px.png"),
                           full_page=True)
    finally:
        context.close()
