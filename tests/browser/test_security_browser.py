"""The Content-Security-Policy in a real browser: an inline script is blocked, while the
dashboard (htmx polling, actions, history) keeps working with no violation at all."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before the page's own scripts (Playwright injects it outside the page's CSP).
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
    e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""

INLINE_SCRIPT = """() => {
    const script = document.createElement('script');
    script.textContent = 'window.__inlineRan = true;';
    document.body.appendChild(script);
    return new Promise(resolve => setTimeout(resolve, 200));
}"""


def test_csp_blocks_inline_script_and_the_dashboard_still_works(page, operator, rclient):
    page.add_init_script(WATCH_VIOLATIONS)
    log_in(page)
    csp = page.request.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in csp

    # The dashboard works under the policy: htmx loaded with the safe config, an action
    # swaps its fragment and flash, polling goes on, history keeps no snapshots.
    config = page.evaluate("() => [htmx.config.allowEval, htmx.config.allowScriptTags, "
                           "htmx.config.historyCacheSize]")
    assert config == [False, False, 0]
    page.get_by_role("button", name="Pause queue redis:default").click()
    expect(page.locator("#flash")).to_contain_text("Queue redis:default paused")
    assert rclient.sismember("queueing:paused", "redis:default")
    page.get_by_role("button", name="Continue queue redis:default").click()
    expect(page.locator("#flash")).to_contain_text("Queue redis:default continued")
    page.mouse.move(5, 5)  # the overview holds while the pointer is on it (issue 31)
    with page.expect_request(lambda r: r.headers.get("hx-request") == "true"):
        pass  # the overview polls every 2 s
    page.get_by_role("link", name="Audit log").click()
    expect(page.locator("#audit-log")).to_contain_text("pause queue")
    assert page.evaluate("() => sessionStorage.getItem('htmx-history-cache')") is None
    assert page.evaluate("() => window.__violations") == []

    # An inline script is refused.
    page.evaluate(INLINE_SCRIPT)
    assert page.evaluate("() => window.__inlineRan") is None
    violations = page.evaluate("() => window.__violations")
    assert any(v.startswith("script-src") and "inline" in v for v in violations), violations
