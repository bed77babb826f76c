"""The standalone site's admin loads the apps' admin modules with its URL conf
(SimpleAdminConfig, then admin.autodiscover() in standalone/urls.py), so a worker,
which never loads the URL conf, does not import them (issue 52); the site's admin
pages still list every app's models."""
import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, User


@pytest.mark.django_db
def test_the_admin_lists_the_apps_models(client):
    User.objects.create_superuser("root", "root@example.com", "a-long-password-1")
    client.force_login(User.objects.get(username="root"))
    page = client.get("/admin/")
    assert page.status_code == 200
    assert admin.site.is_registered(User) and admin.site.is_registered(Group)
    assert client.get("/admin/auth/user/").status_code == 200
