"""Issue 32, login throttle: what a stranger can hold back.

- A browser that logged in before keeps logging in from a new address during a guessing
  attack spread over many addresses (it carries a signed device cookie).
- Behind a proxy that hides client addresses (every request from the proxy's), 20
  failures hold back strangers, not browsers that logged in before.
- With ``HORIZON["trusted_proxy_header"]`` the client's address is read from that header
  (the entry the trusted proxies appended), so one client's failures hold back that
  client only; without the setting the header is ignored, so a client cannot pick a
  fresh address per guess by sending it.
Real Redis, real SQLite, the standalone site's URLs, Django's test client."""
import pytest
from django.contrib.auth.models import User
from django.test import Client

from horizon.login import devices as login_devices
from horizon.login import throttle as login_throttle

pytestmark = pytest.mark.django_db(transaction=True)
PROXY = "10.9.9.9"


def login(client: Client, username="ops", password="right-password", **meta):
    return client.post("/login/", {"username": username, "password": password}, **meta)


def log_out(browser: Client) -> None:
    """Log out as a browser does: the session ends, other cookies stay (the test
    client's logout drops every cookie)."""
    kept = browser.cookies.get(login_devices.COOKIE)
    assert browser.post("/logout/").status_code in (200, 302)
    if kept is not None:
        browser.cookies[login_devices.COOKIE] = kept.value
    assert not logged_in(browser)


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def ops():
    return User.objects.create_user("ops", password="right-password", is_staff=True)


def test_the_users_browser_logs_in_from_a_new_address_during_a_spread_attack(rclient, ops):
    browser = Client(REMOTE_ADDR="192.0.2.20")
    assert login(browser).status_code == 302
    log_out(browser)
    for address in range(login_throttle.USERNAME_LIMIT + 5):  # one guess per address
        login(Client(REMOTE_ADDR=f"10.2.{address // 250}.{address % 250}"), password="guess")
    assert login(Client(REMOTE_ADDR="203.0.113.9"), password="guess").status_code == 429
    response = login(browser, REMOTE_ADDR="198.51.100.7")  # travelling: a new address
    assert response.status_code == 302 and logged_in(browser)


def test_behind_a_hiding_proxy_20_failures_hold_back_strangers_only(rclient, ops):
    browser = Client(REMOTE_ADDR=PROXY)
    assert login(browser).status_code == 302
    log_out(browser)
    attacker = Client(REMOTE_ADDR=PROXY)
    for n in range(login_throttle.ADDRESS_LIMIT + 5):
        login(attacker, username=f"guess{n}", password="guess")
    assert login(Client(REMOTE_ADDR=PROXY)).status_code == 429, "a new browser waits"
    response = login(browser)
    assert response.status_code == 302 and logged_in(browser)


def test_a_device_cookie_is_bound_to_its_user_and_counts_its_own_failures(rclient, ops):
    User.objects.create_superuser("root", "root@example.com", "root-password")
    browser = Client(REMOTE_ADDR=PROXY)
    assert login(browser).status_code == 302
    log_out(browser)
    for n in range(login_throttle.ADDRESS_LIMIT + 5):  # the proxy's address is held
        login(Client(REMOTE_ADDR=PROXY), username=f"x{n}", password="guess")
    assert login(browser, username="root", password="root-password").status_code == 429
    for _ in range(login_throttle.PAIR_LIMIT):  # guesses with a stolen cookie
        login(browser, password="guess")
    assert login(browser).status_code == 429


def test_a_trusted_proxy_header_gives_each_client_its_own_count(rclient, ops, settings):
    settings.HORIZON = {**settings.HORIZON, "trusted_proxy_header": "X-Forwarded-For"}
    attacker = Client(REMOTE_ADDR=PROXY)
    for n in range(login_throttle.ADDRESS_LIMIT + 5):
        login(attacker, username=f"guess{n}", password="guess",
              HTTP_X_FORWARDED_FOR="203.0.113.66")
    assert login(attacker, HTTP_X_FORWARDED_FOR="203.0.113.66").status_code == 429
    # A client's own X-Forwarded-For entries come before the one the proxy appended.
    assert login(attacker, HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.66"
                 ).status_code == 429
    stranger = Client(REMOTE_ADDR=PROXY)
    response = login(stranger, HTTP_X_FORWARDED_FOR="198.51.100.9")
    assert response.status_code == 302 and logged_in(stranger)


def test_without_the_setting_the_header_is_ignored(rclient, ops):
    attacker = Client(REMOTE_ADDR="203.0.113.70")
    for n in range(login_throttle.ADDRESS_LIMIT + 5):
        login(attacker, username=f"guess{n}", password="guess",
              HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")
    assert login(attacker, HTTP_X_FORWARDED_FOR="192.0.2.99").status_code == 429


def test_two_trusted_hops_read_the_second_entry_from_the_right(rclient, ops, settings):
    settings.HORIZON = {**settings.HORIZON, "trusted_proxy_header": "X-Forwarded-For",
                        "trusted_proxy_hops": 2}
    request = type("R", (), {"META": {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR":
                                      "6.6.6.6, 203.0.113.5, 10.0.0.2"}})()
    assert login_throttle.address_of(request) == "203.0.113.5"
    request.META["HTTP_X_FORWARDED_FOR"] = "10.0.0.2"  # fewer entries than hops: not via
    assert login_throttle.address_of(request) == PROXY  # both proxies; their own address


def test_a_bad_proxy_setting_fails_the_checks(settings):
    from django.core.checks import run_checks
    settings.HORIZON = {**settings.HORIZON, "trusted_proxy_header": "X-Forwarded-For",
                        "trusted_proxy_hops": "2"}
    assert any("trusted_proxy_hops" in e.msg for e in run_checks())
