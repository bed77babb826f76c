"""Proxies, SSO and the audit trail (issue 40, item 6): behind a trusted proxy the audit
log records the client's address (the throttles' one); groups mapped by
HORIZON["role_groups"] grant the dashboard's roles; every audit entry, from the dashboard
or the command line, is also a horizon.audit log record and an audit_recorded signal.
Real Redis, real SQLite, the standalone site's URLs, Django's test client."""
import logging
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.checks import run_checks
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from horizon.models import AuditEntry
from horizon.signals import audit_recorded

pytestmark = pytest.mark.django_db(transaction=True)
PROXY = "10.9.9.9"


def staff_in(*groups, username="sso-user", staff=True) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=staff)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def as_client(user, **meta) -> Client:
    client = Client(**meta)
    client.force_login(user)
    return client


@pytest.fixture
def heard():
    got = []

    def receiver(sender, entry, **_):
        got.append(entry)

    audit_recorded.connect(receiver)
    yield got
    audit_recorded.disconnect(receiver)


def pause_default(client, **headers):
    return client.post(reverse("horizon:queue-control", args=["redis:default", "pause"]),
                       headers=headers)


def test_behind_a_trusted_proxy_the_audit_log_has_the_clients_address(
        settings, rclient, heard, caplog):
    settings.HORIZON = {**settings.HORIZON, "trusted_proxy_header": "X-Forwarded-For"}
    operator = as_client(User.objects.create_superuser("root", password="pw"),
                         REMOTE_ADDR=PROXY)
    with caplog.at_level(logging.INFO, logger="horizon.audit"):
        response = pause_default(operator, **{"X-Forwarded-For": "198.51.100.4, 203.0.113.9"})
    assert response.status_code in (200, 302)
    entry = AuditEntry.objects.get(action="pause queue")
    assert entry.address == "203.0.113.9", "the entry the trusted proxy appended"
    assert [e.id for e in heard] == [entry.id]
    [logged] = [r for r in caplog.records if r.name == "horizon.audit"]
    assert (logged.audit_user, logged.audit_action, logged.audit_target,
            logged.audit_address) == ("root", "pause queue", "redis:default", "203.0.113.9")
    page = operator.get(reverse("horizon:audit")).content.decode()
    assert "203.0.113.9" in page
    # without the setting the header is ignored: the proxy's own address
    settings.HORIZON = {k: v for k, v in settings.HORIZON.items()
                        if k != "trusted_proxy_header"}
    pause_default(operator, **{"X-Forwarded-For": "198.51.100.4"})
    assert AuditEntry.objects.filter(action="pause queue").first().address == PROXY


def test_sso_groups_map_to_roles(settings, rclient):
    settings.HORIZON = {**settings.HORIZON,
                        "role_groups": {"operate": ["sre"], "view": ["support"]}}
    overview = reverse("horizon:overview")
    viewer = as_client(staff_in("support", username="viewer"))
    assert viewer.get(overview).status_code == 200
    assert pause_default(viewer).status_code == 403, "view only"
    operator = as_client(staff_in("sre", username="operator"))
    assert operator.get(overview).status_code == 200
    assert pause_default(operator).status_code in (200, 302)
    assert AuditEntry.objects.get(action="pause queue").user == "operator"
    stranger = as_client(staff_in("marketing", username="stranger"))
    assert stranger.get(overview).status_code == 403
    not_staff = as_client(staff_in("sre", username="not-staff", staff=False))
    assert not_staff.get(overview).status_code == 403, "the dashboard stays staff-only"
    settings.HORIZON = {**settings.HORIZON, "role_groups": {"admin": ["sre"]}}
    assert "horizon.E018" in [e.id for e in run_checks()]
    assert as_client(User.objects.get(username="operator")).get(overview).status_code == 403


def test_a_cli_action_is_audited_logged_and_signalled(rclient, heard, caplog):
    with caplog.at_level(logging.INFO, logger="horizon.audit"):
        call_command("queue_pause", "default", stdout=StringIO(), stderr=StringIO())
    entry = AuditEntry.objects.get(action="pause queue")
    assert entry.user.endswith("(cli)") and entry.address == ""
    assert [e.id for e in heard] == [entry.id]
    assert [r.audit_action for r in caplog.records if r.name == "horizon.audit"] == \
        ["pause queue"]
