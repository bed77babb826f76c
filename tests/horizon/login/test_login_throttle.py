"""Issue 26, item 1: one login throttle for every way in, which a stranger cannot turn
into a lock-out, and a /metrics token that is long and cannot be guessed at speed.
Real Redis, the standalone site's URLs, Django's test client."""
import pytest
from django.contrib.auth.models import User
from django.core.checks import run_checks
from django.test import Client

from horizon.login import throttle as login_throttle

pytestmark = pytest.mark.django_db(transaction=True)


def admin_login(client: Client, username: str, password: str):
    return client.post("/admin/login/?next=/admin/", {"username": username,
                                                      "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_the_throttle_holds_at_admin_login(rclient):
    User.objects.create_superuser("root", "root@example.com", "right-password")
    attacker = Client(REMOTE_ADDR="10.0.0.66")
    for _ in range(30):
        admin_login(attacker, "root", "wrong")
    admin_login(attacker, "root", "right-password")
    assert not logged_in(attacker), "the right password got in after 30 failures"
    assert attacker.get("/").status_code == 302, "the dashboard stays behind the login"
    response = attacker.post("/login/", {"username": "root", "password": "right-password"})
    assert response.status_code == 429, "both login forms share one count"


def test_failures_at_the_login_page_hold_back_the_admin_form(rclient):
    User.objects.create_superuser("root", "root@example.com", "right-password")
    attacker = Client(REMOTE_ADDR="10.0.0.67")
    for _ in range(login_throttle.PAIR_LIMIT):
        attacker.post("/login/", {"username": "root", "password": "wrong"})
    admin_login(attacker, "root", "right-password")
    assert not logged_in(attacker)


def test_a_real_user_under_attack_still_logs_in(rclient):
    User.objects.create_user("ops", password="right-password", is_staff=True)
    for address in range(3):  # a guessing attack from a few addresses
        attacker = Client(REMOTE_ADDR=f"10.0.1.{address}")
        for _ in range(25):
            attacker.post("/login/", {"username": "ops", "password": "guess"})
    user = Client(REMOTE_ADDR="192.0.2.10")
    response = user.post("/login/", {"username": "ops", "password": "right-password"})
    assert response.status_code == 302 and logged_in(user)


def test_a_spread_attack_holds_back_strangers_but_not_the_users_own_address(rclient):
    User.objects.create_user("ops", password="right-password", is_staff=True)
    usual = Client(REMOTE_ADDR="192.0.2.20")
    assert usual.post("/login/", {"username": "ops", "password": "right-password"}
                      ).status_code == 302
    for address in range(login_throttle.USERNAME_LIMIT):  # one guess per address
        Client(REMOTE_ADDR=f"10.2.{address // 250}.{address % 250}").post(
            "/login/", {"username": "ops", "password": "guess"})
    stranger = Client(REMOTE_ADDR="203.0.113.9")
    assert stranger.post("/login/", {"username": "ops", "password": "guess"}
                         ).status_code == 429
    again = Client(REMOTE_ADDR="192.0.2.20")
    response = again.post("/login/", {"username": "ops", "password": "right-password"})
    assert response.status_code == 302 and logged_in(again)


def test_backoff_grows_and_ends():
    limit = login_throttle.PAIR_LIMIT
    delays = [login_throttle.delay_after(n, limit) for n in range(limit - 1, limit + 12)]
    assert delays[0] == 0 and delays[1] == login_throttle.BASE_DELAY
    assert delays == sorted(delays) and delays[-1] == login_throttle.MAX_DELAY


METRICS_TOKEN = "k" * 40


def test_a_short_metrics_token_fails_the_checks(settings):
    settings.HORIZON_METRICS_TOKEN = "short-token"
    assert "horizon.E012" in [m.id for m in run_checks()]
    settings.HORIZON_METRICS_TOKEN = METRICS_TOKEN
    assert "horizon.E012" not in [m.id for m in run_checks()]


def test_every_check_id_names_one_check(settings):
    """Issue 32: the token and the htmx middleware checks both used horizon.E010, so
    silencing one (SILENCED_SYSTEM_CHECKS) silenced the other."""
    settings.HORIZON_METRICS_TOKEN = "short-token"
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "htmx" not in m]
    found = [m for m in run_checks() if m.id in ("horizon.E010", "horizon.E012")]
    assert sorted((m.id, "TOKEN" in m.msg) for m in found) == [
        ("horizon.E010", False), ("horizon.E012", True)]


def test_metrics_token_guesses_are_throttled(settings, rclient):
    settings.HORIZON_METRICS_TOKEN = METRICS_TOKEN
    guesser = Client(REMOTE_ADDR="10.0.0.99")
    answers = [guesser.get("/metrics", headers={"Authorization": f"Bearer guess{i}"}
                           ).status_code for i in range(login_throttle.METRICS_LIMIT + 5)]
    assert answers[:login_throttle.METRICS_LIMIT] == [401] * login_throttle.METRICS_LIMIT
    assert set(answers[login_throttle.METRICS_LIMIT:]) == {429}
    held = guesser.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert held.status_code == 429 and int(held["Retry-After"]) > 0
    scraper = Client(REMOTE_ADDR="10.0.0.5")
    assert scraper.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
                       ).status_code == 200
