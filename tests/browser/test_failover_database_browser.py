"""Issue 35 in headless Chromium: a failover seen by an operator. The failover
connection's Redis goes away (refused), dispatches go to the database, and the overview
(which marks that connection as not answering, issue 47: Horizon's own Redis is up)
shows the failover, since when, and the jobs waiting in the fallback; Redis comes back, a dispatch's probe closes the circuit,
the overview shows the jobs still waiting, and once the master's drain has moved them
the panel goes away by itself (the overview's poll). PostgreSQL (SQLite without it)."""
import copy
import time
from urllib.parse import urlparse

import pytest
from django.conf import settings as django_settings
from django.test import override_settings
from playwright.sync_api import expect

from queueing import connections
from queueing.failover.drain import drain
from tests.browser.conftest import log_in
from tests.conftest import WORKER_DATABASES
from tests.tcp_proxy import TcpProxy
from tests.testapp import jobs

pytestmark = [pytest.mark.browser,
              pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)]
DB = django_settings.DB_TEST_CONNECTION


@pytest.fixture
def proxied(settings):
    from queueing.models import ControlValue, QueuedJob

    alias = django_settings.QUEUE["connections"][DB]["database"]
    for model in (QueuedJob, ControlValue):
        model.objects.using(alias).all().delete()
    socket_path = urlparse(django_settings.TEST_REDIS_URL).path
    proxy = TcpProxy(upstream_unix=socket_path)
    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"]["near"] = {"driver": "redis", "url": proxy.url,
                                    "queues": ["default"],
                                    "options": {"socket_timeout": 1, "socket_connect_timeout": 1}}
    queue["connections"]["fo"] = {"driver": "failover", "connections": ["near", DB],
                                  "retry_primary_after": 0.5}
    holder = {"proxy": proxy, "socket": socket_path}
    with override_settings(QUEUE=queue):
        connections.reset()
        yield holder
    holder["proxy"].close()
    connections.reset()


def test_an_operator_sees_dispatches_fail_over_and_come_back(page, operator, proxied,
                                                            screenshots, rclient):
    log_in(page)
    expect(page.locator("#overview")).to_be_visible()
    expect(page.locator(".failover")).to_have_count(0)

    port = proxied["proxy"].port
    proxied["proxy"].close()  # Redis away: refused
    for i in range(5):
        jobs.record.using(connection="fo").delay(f"away-{i}")
    page.goto("/")
    panel = page.locator("#failover-fo")
    expect(page.locator("main")).to_contain_text("Connection 'near' is not answering")
    expect(panel).to_contain_text("Dispatches on 'fo' are failing over: 'near' is skipped, "
                                  f"jobs go to '{DB}'")
    expect(panel.locator(".failover-waiting")).to_have_text("5")
    expect(panel).to_contain_text("Failing over since")
    page.screenshot(path=str(screenshots / "failover-redis-away.png"))

    proxied["proxy"] = TcpProxy(upstream_unix=proxied["socket"], port=port)  # back
    connections.reset()
    time.sleep(0.6)
    jobs.record.using(connection="fo").delay("back")  # the probe: the circuit closes
    page.goto("/")
    panel = page.locator("#failover-fo")
    expect(panel).to_contain_text("5 jobs dispatched on 'fo' wait in the fallback")
    expect(panel).not_to_contain_text("failing over")
    page.screenshot(path=str(screenshots / "failover-draining.png"))

    assert drain("fo") == 5
    expect(page.locator(".failover")).to_have_count(0)  # the next poll drops it
    assert rclient.llen("queues:{default}") == 6
    rclient.delete("queues:{default}", "queues:{default}:notify")
