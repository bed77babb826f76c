"""Issue 51, in headless Chromium at 1360x900: Running now fits its panel in light and
dark mode, Cancel in view (its table was 1226 px in a 1078-px panel, Cancel and Timeout
off-screen). Two real jobs run on a real worker."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.testapp import jobs as test_jobs
from tests.workers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FITS = """() => {
  const panel = document.querySelector('#running .panel');
  const table = panel.querySelector('table');
  const cancel = [...panel.querySelectorAll('button')].filter(b => b.textContent.trim() === 'Cancel');
  const box = b => b.getBoundingClientRect();
  return {panel: [panel.clientWidth, panel.scrollWidth], table: box(table).width,
          page: document.documentElement.scrollWidth,
          cancels: cancel.map(b => [box(b).left, box(b).right]),
          cells: [...table.querySelectorAll('thead th')].map(c => Math.round(box(c).width))};
}"""


def started(label) -> bool:
    return any(m["label"] == label for m in test_jobs.marks("start"))


def test_running_now_fits_1360_px_with_cancel_in_view(page, operator, spawn_worker,
                                                      screenshots):
    worker = spawn_worker("--concurrency=4")
    for label in ("first", "second"):
        test_jobs.gated_sync.delay(label)
    wait_until(lambda: (started("first") and started("second")) or not worker.running(),
               timeout=30, message="both jobs running")
    assert worker.running(), worker.output()
    log_in(page, next_path="/jobs/running/")
    assert page.viewport_size == {"width": 1360, "height": 900}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.reload()
        expect(page.locator("#running button:has-text('Cancel')")).to_have_count(2)
        seen = page.evaluate(FITS)
        page.screenshot(path=str(screenshots / f"running-1360-{scheme}.png"))
        clientw, scrollw = seen["panel"]
        assert scrollw <= clientw + 1 and seen["table"] <= clientw + 1, seen
        assert seen["page"] <= 1360, seen
        for left, right in seen["cancels"]:
            assert 0 <= left and right <= 1360, seen
