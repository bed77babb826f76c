"""Issue 31 (smaller points), in Chromium at 1360 px: dark mode's primary buttons read at
4.5:1 or better (they were 2.7:1: white on light purple), and the Metrics page's table
fits its panel at 1360 px with long queue and job names (it overflowed)."""
import pytest

from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)

CONTRAST = """el => {
  const rgb = c => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const s = getComputedStyle(el);
  const [a, b] = [lum(s.color), lum(s.backgroundColor)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def test_dark_mode_primary_buttons_have_enough_contrast(page, operator):
    log_in(page)
    page.emulate_media(color_scheme="dark")
    page.goto("/failed/")
    page.evaluate("""() => { const b = document.createElement('button');
        b.className = 'button primary'; b.id = 'probe'; b.textContent = 'Retry';
        document.querySelector('main').prepend(b); }""")
    probe = page.locator("#probe")
    assert probe.evaluate(CONTRAST) >= 4.5
    probe.hover()
    assert probe.evaluate(CONTRAST) >= 4.5
    page.emulate_media(color_scheme="light")
    page.mouse.move(0, 0)
    assert probe.evaluate(CONTRAST) >= 4.5


def test_the_metrics_table_fits_at_1360_px(page, operator, rclient):
    from tests.helpers import complete

    for i in range(6):
        complete(rclient, name=f"app.billing.jobs.ReconcileInvoicesForEnterpriseAccount{i}",
                 queue=f"billing-reconciliation-enterprise-{i}")
    log_in(page, next_path="/metrics/")
    page.goto("/metrics/")
    assert page.viewport_size["width"] == 1360
    width = page.evaluate("() => document.documentElement.scrollWidth")
    overflowing = page.evaluate("""() => [...document.querySelectorAll('.panel')]
        .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.id || p.className)""")
    detail = page.evaluate("""() => [...document.querySelectorAll(".panel")].map(p => [p.scrollWidth, p.clientWidth, p.querySelector("table") && p.querySelector("table") && [...p.querySelectorAll("tbody tr:first-child td, thead th")].map(c => c.offsetWidth + ":" + c.textContent.trim().slice(0, 20)).join("|")])""")
    assert width <= 1360 and overflowing == [], (width, overflowing, detail)
