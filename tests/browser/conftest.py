"""Headless Chromium (Debian's `chromium`) driven by Playwright, against pytest-django's
live server. The browser must be there: CI installs it, so a missing one fails the
tests instead of skipping them."""
import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# between browser steps are still plain synchronous code.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = os.environ.get("HORIZON_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PASSWORD = "correct horse battery"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is a browser test (``-m browser`` / ``not browser``),
    whether or not its module says so."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package "
                    "(.ci/run does) or set HORIZON_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=live_server.url)
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    tab.on("dialog", lambda dialog: dialog.accept())  # hx-confirm prompts
    errors = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    yield tab
    context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture
def operator(db):
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user("operator", password=PASSWORD, is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="operate_dashboard"))
    return user


@pytest.fixture
def screenshots(tmp_path_factory) -> Path:
    """Where page screenshots go: $HORIZON_SCREENSHOT_DIR, else a temp folder."""
    folder = os.environ.get("HORIZON_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return tmp_path_factory.mktemp("screenshots")


def log_in(tab, username="operator", password=PASSWORD, next_path="/"):
    tab.goto(next_path)
    assert "/login/" in tab.url
    tab.fill("#id_username", username)
    tab.fill("#id_password", password)
    tab.click("button[type=submit]")
    tab.wait_for_url(f"**{next_path}")
