"""Issue 51, item 1: several apps in one dashboard. One site shows its own namespace and
each one HORIZON["apps"] lists, under ``@<namespace>/``: an unknown name is a 404, links
keep the choice, each action reaches only the app its URL names and is audited with it,
an app may have its own roles, and one page shows every app at a glance."""
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.test import Client, override_settings

from horizon.models import AuditEntry
from queueing import connections
from queueing.models import FailedJob
from queueing.settings import namespace
from tests.helpers import client_with, fail, push, superuser_client, text

pytestmark = pytest.mark.django_db
BLOG = "blog"


@pytest.fixture(autouse=True)
def two_apps():
    with override_settings(HORIZON={**settings.HORIZON, "apps": [BLOG]}):
        yield


def _uuids(driver) -> list[str]:
    import json
    raw = driver.client.lrange(driver.keys("default").ready, 0, -1)
    return [json.loads(entry)["uuid"] for entry in raw]


def seed() -> tuple[dict, dict]:
    own = push(connections.queue_driver("redis"), name="app.jobs.own_job")
    with namespace.scoped(BLOG):
        blog = push(connections.queue_driver("redis"), name="app.jobs.blog_job")
    return own, blog


def test_an_app_not_configured_is_a_404_and_a_configured_one_is_served():
    client = superuser_client()
    assert client.get("/@nope/jobs/pending/").status_code == 404
    assert client.get("/@{blog}/").status_code == 404
    assert client.get(f"/@{BLOG}/jobs/pending/").status_code == 200
    alone = {key: value for key, value in settings.HORIZON.items() if key != "apps"}
    with override_settings(HORIZON=alone):  # no apps: no other app
        assert client.get(f"/@{BLOG}/jobs/pending/").status_code == 404


def test_each_app_shows_its_own_jobs_and_its_links_keep_the_choice():
    seed()
    client = superuser_client()
    own_page, blog_page = text(client.get("/jobs/pending/")), \
        text(client.get(f"/@{BLOG}/jobs/pending/"))
    assert "own_job" in own_page and "blog_job" not in own_page
    assert "blog_job" in blog_page and "own_job" not in blog_page
    hrefs = set(re.findall(r'href="(/[^"]*)"', blog_page))
    dashboard = {h for h in hrefs if not h.startswith(("/static", "/login", "/logout",
                                                        "/admin", "/favicon"))}
    assert f"/@{BLOG}/jobs/delayed/" in dashboard and f"/@{BLOG}/failed/" in dashboard
    leaving = {h for h in dashboard if not h.startswith(f"/@{BLOG}/")}
    # the switcher's own link and "All apps" leave the app on purpose; nothing else does
    assert leaving <= {"/jobs/pending/", "/apps/"}, leaving
    assert re.search(rf'hx-get="/@{BLOG}/jobs/pending/', blog_page), "the poll keeps it"


def test_a_delete_in_one_app_leaves_the_other_untouched():
    own, blog = seed()
    client = superuser_client()
    response = client.post(f"/@{BLOG}/jobs/pending/{blog['uuid']}/delete/",
                           {"job_queue": "redis:default", "at": "0"})
    assert response.status_code == 302 and response["Location"].startswith(f"/@{BLOG}/")
    assert _uuids_in(BLOG) == [] and _uuids_in("") == [own["uuid"]]
    # the own app's job, named in the blog app's URL, is not found there
    client.post(f"/@{BLOG}/jobs/pending/{own['uuid']}/delete/",
                {"job_queue": "redis:default", "at": "0"})
    assert _uuids_in("") == [own["uuid"]]
    entry = AuditEntry.objects.get(action="delete pending")
    assert (entry.app, entry.target) == (BLOG, blog["uuid"])


def _uuids_in(space: str) -> list[str]:
    with namespace.scoped(space):
        return _uuids(connections.queue_driver("redis"))


def test_a_failed_job_is_retried_into_its_own_app_only():
    own_row = fail(name="app.jobs.own_job")
    with namespace.scoped(BLOG):
        blog_row = fail(name="app.jobs.blog_job")
    client = superuser_client()
    own_list, blog_list = text(client.get("/failed/")), text(client.get(f"/@{BLOG}/failed/"))
    assert "own_job" in own_list and "blog_job" not in own_list
    assert "blog_job" in blog_list and "own_job" not in blog_list
    # another app's row cannot be reached from this one's URL
    client.post(f"/@{BLOG}/failed/{own_row.uuid}/retry/")
    assert FailedJob.every_namespace.filter(uuid=own_row.uuid).exists()
    assert _uuids_in(BLOG) == [] and _uuids_in("") == []
    client.post(f"/@{BLOG}/failed/{blog_row.uuid}/retry/")
    assert _uuids_in(BLOG) == [blog_row.uuid] and _uuids_in("") == []
    assert not FailedJob.every_namespace.filter(uuid=blog_row.uuid).exists()
    assert AuditEntry.objects.get(action="retry").app == BLOG


def test_the_audit_log_of_each_app_is_its_own():
    seed()
    client = superuser_client()
    own_job = _uuids_in("")[0]
    client.post(f"/jobs/pending/{own_job}/delete/", {"job_queue": "redis:default", "at": "0"})
    assert AuditEntry.objects.get().app == ""
    assert own_job in text(client.get("/audit/"))
    assert own_job not in text(client.get(f"/@{BLOG}/audit/"))


def test_an_app_with_its_own_role_groups_is_limited_to_them():
    limited = {**settings.HORIZON, "apps": [{"namespace": BLOG,
                                             "role_groups": {"operate": ["blog-ops"]}}]}
    with override_settings(HORIZON=limited):
        own_operator = client_with("operate_dashboard", username="site-ops")
        assert own_operator.get("/jobs/pending/").status_code == 200
        assert own_operator.get(f"/@{BLOG}/jobs/pending/").status_code == 403
        blogger = User.objects.create_user("blogger", password="pw", is_staff=True)
        blogger.groups.add(Group.objects.create(name="blog-ops"))
        blog_client = Client()
        blog_client.force_login(blogger)
        assert blog_client.get("/jobs/pending/").status_code == 403
        assert blog_client.get(f"/@{BLOG}/jobs/pending/").status_code == 200
        _, blog = seed()
        response = blog_client.post(f"/@{BLOG}/jobs/pending/{blog['uuid']}/delete/",
                                    {"job_queue": "redis:default", "at": "0"})
        assert response.status_code == 302 and _uuids_in(BLOG) == []
        # the switcher offers only the apps one may see
        page = text(blog_client.get(f"/@{BLOG}/jobs/pending/"))
        assert 'data-app="(no namespace)"' not in page
        assert Permission.objects.filter(codename="operate_dashboard").exists()


def test_every_app_at_a_glance():
    seed()
    with namespace.scoped(BLOG):
        push(connections.queue_driver("redis"), name="app.jobs.blog_job")
        fail(name="app.jobs.blog_job")
    page = text(superuser_client().get("/apps/"))
    rows = dict(re.findall(r'<tr data-app="([^"]+)">(.*?)</tr>', page, re.S))
    assert set(rows) == {"(no namespace)", BLOG}
    pending = {app: re.search(r'data-col="pending">([^<]*)<', row).group(1)
               for app, row in rows.items()}
    failed = {app: re.search(r'data-col="failed">([^<]*)<', row).group(1)
              for app, row in rows.items()}
    assert pending == {"(no namespace)": "1", BLOG: "2"}
    assert failed == {"(no namespace)": "0", BLOG: "1"}
    assert f'href="/@{BLOG}/"' in page


def test_every_page_of_another_app_is_guarded_as_its_own_page_is():
    from django.urls import URLPattern, URLResolver

    from horizon.dashboard.urls import urlpatterns

    plain = {p.pattern.describe(): p.callback for p in urlpatterns if isinstance(p, URLPattern)}
    (scoped,) = [p for p in urlpatterns if isinstance(p, URLResolver)]
    again = {p.pattern.describe(): p.callback for p in scoped.url_patterns}
    assert again.keys() == plain.keys()
    for route, view in again.items():
        assert getattr(view, "horizon_action", None) is getattr(plain[route], "horizon_action",
                                                                 None), route
        assert view.__wrapped__ is plain[route], route


@pytest.mark.parametrize("bad", ["blog", ["{blog}"], ["a:b"], [""], [{"name": "blog"}],
                                 [{"namespace": "blog", "role_groups": {"admin": ["x"]}}],
                                 [{"namespace": "blog", "role_groups": {"view": "x"}}]])
def test_a_malformed_apps_setting_is_reported_and_shows_no_other_app(bad):
    from horizon.configuration.settings import settings_errors
    from horizon.dashboard.apps import choice

    raw = {**settings.HORIZON, "apps": bad}
    assert [e.check_id for e in settings_errors(raw) if e.check_id == "horizon.E020"] == \
        ["horizon.E020"]
    with override_settings(HORIZON=raw):
        assert [app.namespace for app in choice.configured()] == [""]


def test_a_dashboard_mounted_inside_another_include_keeps_the_app_in_its_links():
    seed()
    with override_settings(ROOT_URLCONF="tests.testapp.nested_dashboard_urls"):
        client = superuser_client()
        page = text(client.get(f"/ops/horizon/@{BLOG}/jobs/pending/"))
        assert "blog_job" in page and "own_job" not in page
        assert 'href="/ops/horizon/@blog/failed/"' in page
        assert 'href="/ops/horizon/jobs/pending/" data-app="(no namespace)"' in page
        assert client.get("/ops/horizon/@nope/").status_code == 404


def test_a_pause_in_one_app_pauses_that_apps_queue_only():
    client = superuser_client()
    response = client.post(f"/@{BLOG}/queues/redis:default/pause/")
    assert response.status_code == 302 and response["Location"].startswith(f"/@{BLOG}/")
    with namespace.scoped(BLOG):
        assert connections.queue_driver("redis").is_paused("default")
    assert not connections.queue_driver("redis").is_paused("default")
    assert AuditEntry.objects.get().app == BLOG
    client.post(f"/@{BLOG}/queues/redis:default/continue/")
    with namespace.scoped(BLOG):
        assert not connections.queue_driver("redis").is_paused("default")
