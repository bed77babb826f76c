"""Every dashboard URL pattern: who may reach it, how actions refuse GET and forged POSTs.

The patterns are enumerated from the URLconf, so a new page or action without sample
arguments here fails `test_every_pattern_has_a_sample` until it is covered.
"""
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory
from django.urls import URLPattern, get_resolver, reverse

from horizon.dashboard.urls import urlpatterns

pytestmark = pytest.mark.django_db

# URL name -> reverse() args. Actions are detected from the view (auth.action marks them).
SAMPLES = {
    "overview": [],
    "apps": [],
    "jobs": ["pending"],
    "job": ["failed", "0f0e0d0c-0000-4000-8000-000000000000"],
    "job-delete": ["pending", "0f0e0d0c-0000-4000-8000-000000000000"],
    "job-run": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "failed": [],
    "failed-retry-matching": [],
    "failed-selected": ["retry"],
    "retries": [],
    "failed-edit": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "jobs-selected": ["pending", "delete"],
    "failed-delete-matching": [],
    "failed-retry": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "failed-delete": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "workers": [],
    "running": [],
    "expired": [],
    "dropped": [],
    "silenced": [],
    "monitoring": [],
    "monitoring-watch": [],
    "monitoring-tag": ["auth.User:42"],
    "monitoring-stop": ["auth.User:42"],
    "job-cancel": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "metrics": [],
    "audit": [],
    "locks": [],
    "lock-release": [],
    "control": ["pause"],
    "supervisor-control": ["supervisor-1", "pause"],
    "master-control": ["test-master", "pause"],
    "queue-control": ["redis:default", "pause"],
    "schedules": [],
    "schedule-control": ["new-year-report", "pause"],
    "schedule-run": ["new-year-report"],
    "batches": [],
    "batch": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "batch-retry": ["0f0e0d0c-0000-4000-8000-000000000000"],
    "batch-cancel": ["0f0e0d0c-0000-4000-8000-000000000000"],
}
# Endpoints for machines, with their own auth (a bearer token, 401 not a login
# redirect), tested in their own files: the Prometheus scrape is in test_prometheus.py.
MACHINE_ENDPOINTS = {"prometheus"}


def patterns() -> list[URLPattern]:
    return [p for p in urlpatterns if isinstance(p, URLPattern)
            and p.name not in MACHINE_ENDPOINTS]


def test_machine_endpoints_are_marked_as_such():
    marked = {p.name for p in urlpatterns if isinstance(p, URLPattern)
              and getattr(p.callback, "horizon_machine_endpoint", False)}
    assert marked == MACHINE_ENDPOINTS


def url_of(pattern: URLPattern) -> str:
    return reverse(f"horizon:{pattern.name}", args=SAMPLES[pattern.name])


def is_action(pattern: URLPattern) -> bool:
    return getattr(pattern.callback, "horizon_action", None) is True


ALL = [pytest.param(p, id=p.name) for p in patterns()]
ACTIONS = [pytest.param(p, id=p.name) for p in patterns() if is_action(p)]
PAGES = [pytest.param(p, id=p.name) for p in patterns() if not is_action(p)]


def make_user(name, *, staff=False, perm=False, superuser=False) -> User:
    user = User.objects.create_user(name, password="secret-pw", is_staff=staff,
                                    is_superuser=superuser)
    # perm=True: the operate role; perm="view": the read-only role.
    codenames = {True: ["view_dashboard", "operate_dashboard"], "view": ["view_dashboard"]}
    for codename in codenames.get(perm, []):
        user.user_permissions.add(Permission.objects.get(
            content_type__app_label="horizon", codename=codename))
    return user


def client_for(user: User | None, **kwargs) -> Client:
    client = Client(**kwargs)
    if user is not None:
        client.force_login(user)
    return client


def test_every_pattern_has_a_sample():
    names = [p.name for p in patterns()]
    assert len(names) == len(set(names)), "URL names must be unique"
    missing = set(names) - set(SAMPLES)
    assert not missing, f"add auth samples for new dashboard URLs: {sorted(missing)}"
    assert set(SAMPLES) <= set(names), "remove samples of URLs that no longer exist"
    assert all(getattr(p.callback, "horizon_action", None) in (True, False) for p in patterns()), \
        "every dashboard view must be wrapped by auth.page or auth.action"


def test_the_dashboard_is_mounted_at_the_root_with_a_login_page():
    resolver = get_resolver()
    assert reverse("horizon:overview") == "/"
    assert reverse("login") == "/login/" and reverse("logout") == "/logout/"
    assert resolver.resolve("/login/").url_name == "login"


@pytest.mark.parametrize("pattern", ALL)
def test_anonymous_is_sent_to_login(pattern):
    url = url_of(pattern)
    response = Client().post(url) if is_action(pattern) else Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("pattern", ALL)
def test_anonymous_htmx_request_reloads_into_login(pattern):
    url = url_of(pattern)
    client = Client(headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/failed/"})
    response = client.post(url) if is_action(pattern) else client.get(url)
    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=/failed/"


@pytest.mark.parametrize("pattern", ALL)
@pytest.mark.parametrize("kind", ["plain user", "staff without permission",
                                  "permission without staff", "inactive superuser"])
def test_others_get_403(pattern, kind):
    user = {
        "plain user": lambda: make_user("plain"),
        "staff without permission": lambda: make_user("staffer", staff=True),
        "permission without staff": lambda: make_user("permitted", perm=True),
        "inactive superuser": lambda: make_user("gone", superuser=True, staff=True),
    }[kind]()
    if kind == "inactive superuser":
        user.is_active = False
        user.save()
        client = Client()
        client.force_login(user)  # a session from before the account was disabled
    else:
        client = client_for(user)
    url = url_of(pattern)
    response = client.post(url) if is_action(pattern) else client.get(url)
    if kind == "inactive superuser":
        assert response.status_code == 302  # Django's auth backend drops inactive users
        return
    assert response.status_code == 403
    assert response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("pattern", ACTIONS)
@pytest.mark.parametrize("htmx", [False, True])
def test_a_read_only_operator_gets_403_on_every_action(pattern, htmx, rclient):
    client = client_for(make_user("viewer", staff=True, perm="view"), enforce_csrf_checks=True)
    client.get("/")  # a real CSRF token, so the refusal is the role's, not CSRF's
    token = client.cookies["csrftoken"].value
    headers = {"X-CSRFToken": token, **({"HX-Request": "true"} if htmx else {})}
    before = {key: rclient.type(key) for key in rclient.keys("*")}
    response = client.post(url_of(pattern), {"q": "", "fragment": "failed"}, headers=headers)
    assert response.status_code == 403
    assert b"read-only" in response.content
    assert {key: rclient.type(key) for key in rclient.keys("*")} == before, "nothing changed"


@pytest.mark.parametrize("pattern", PAGES)
@pytest.mark.parametrize("kind", ["staff with permission", "read-only staff", "superuser"])
def test_allowed_users_see_pages(pattern, kind):
    user = {"staff with permission": lambda: make_user("ops", staff=True, perm=True),
            "read-only staff": lambda: make_user("viewer", staff=True, perm="view"),
            "superuser": lambda: make_user("root", staff=True, superuser=True)}[kind]()
    response = client_for(user).get(url_of(pattern))
    assert response.status_code in (200, 404)  # 404: the sample job does not exist
    assert response["X-Frame-Options"] == "DENY"
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.parametrize("pattern", PAGES)
def test_pages_refuse_post(pattern):
    client = client_for(make_user("ops", staff=True, perm=True))
    assert client.post(url_of(pattern)).status_code == 405


@pytest.mark.parametrize("pattern", ACTIONS)
def test_actions_refuse_get(pattern):
    client = client_for(make_user("ops", staff=True, perm=True))
    assert client.get(url_of(pattern)).status_code == 405


@pytest.mark.parametrize("pattern", ACTIONS)
@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_actions_refuse_posts_without_csrf_token(pattern, htmx):
    client = client_for(make_user("ops", staff=True, perm=True), enforce_csrf_checks=True)
    headers = {"HX-Request": "true"} if htmx else {}
    response = client.post(url_of(pattern), {"fragment": "overview"}, headers=headers)
    assert response.status_code == 403
    assert b"CSRF" in response.content


def _token(client: Client) -> str:
    request = RequestFactory().get("/")
    token = get_token(request)
    client.cookies["csrftoken"] = request.META["CSRF_COOKIE"]
    return token


@pytest.mark.parametrize("pattern", ACTIONS)
def test_actions_refuse_cross_site_origin_even_with_a_token(pattern):
    client = client_for(make_user("ops", staff=True, perm=True), enforce_csrf_checks=True)
    token = _token(client)
    response = client.post(url_of(pattern), {"csrfmiddlewaretoken": token},
                           headers={"Origin": "https://evil.example"})
    assert response.status_code == 403


def test_a_valid_csrf_token_passes(rclient):
    client = client_for(make_user("ops", staff=True, perm=True), enforce_csrf_checks=True)
    token = _token(client)
    response = client.post(reverse("horizon:queue-control", args=["redis:default", "pause"]),
                           headers={"X-CSRFToken": token, "HX-Request": "true"})
    assert response.status_code == 200
    assert rclient.sismember("queueing:paused", "redis:default")


def test_login_page_logs_in_and_redirects_to_the_dashboard():
    make_user("ops", staff=True, perm=True)
    client = Client()
    page = client.get("/login/?next=/failed/")
    assert page.status_code == 200 and b'name="password"' in page.content
    assert page["X-Frame-Options"] == "DENY"
    response = client.post("/login/", {"username": "ops", "password": "secret-pw",
                                       "next": "/failed/"})
    assert response.status_code == 302 and response["Location"] == "/failed/"
    assert client.get("/failed/").status_code == 200


def test_logout_is_a_post_and_ends_the_session():
    client = client_for(make_user("ops", staff=True, perm=True))
    response = client.post("/logout/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_forbidden_page_offers_to_switch_user():
    response = client_for(make_user("staffer", staff=True)).get("/")
    assert response.status_code == 403
    assert b"horizon.view_dashboard" in response.content
    assert b'action="/logout/"' in response.content


def test_pages_answer_head_requests():
    client = client_for(make_user("ops", staff=True, perm=True))
    assert client.head("/").status_code == 200
    assert client.head("/failed/").status_code == 200


def test_htmx_and_css_are_served_from_the_site_not_a_cdn():
    page = client_for(make_user("ops", staff=True, perm=True)).get("/").content.decode()
    sources = re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', page)
    assert "/static/horizon/htmx.min.js" in sources and "/static/horizon/horizon.css" in sources
    assert not [s for s in sources if "//" in s], "nothing is loaded from another host"
    script = Client().get("/static/horizon/htmx.min.js")
    assert script.status_code == 200
    assert b"htmx" in b"".join(script.streaming_content)
