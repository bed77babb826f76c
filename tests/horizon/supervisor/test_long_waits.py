"""Long-wait alerts: fire once through Django's mail (locmem) and a webhook received by a
local HTTP server, repeat only after the cooldown, then send one recovered notice."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core import mail

from horizon.configuration.settings import HorizonConfigError, parse
from horizon.signals import long_wait_detected, long_wait_recovered
from horizon.waits import WaitMonitor, decide
from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.entries.options import JobOptions
from tests.workers import wait_until


@pytest.fixture
def receiver():
    """A webhook receiver on 127.0.0.1: collects every JSON body POSTed to it."""
    bodies = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers["Content-Length"])
            bodies.append((self.headers["Content-Type"], json.loads(self.rfile.read(length))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", bodies
    server.shutdown()
    server.server_close()


def hold_back(seconds_ago, queue="default"):
    data = payload_lib.build(job_name="tests.testapp.jobs.record", display_name="record",
                             args=["held"], kwargs={}, options=JobOptions(),
                             connection="redis", queue=queue, now=time.time() - seconds_ago)
    connections.redis_driver("redis").push(queue, payload_lib.encode(data))


def test_decide_is_pure_policy():
    assert decide(None, 10, 60, 1000, 300) == (None, None)
    kind, alert = decide(None, 61, 60, 1000, 300)
    assert kind == "long" and alert == {"since": 1000, "notified_at": 1000}
    assert decide(alert, 500, 60, 1299, 300) == (None, alert)
    assert decide(alert, 500, 60, 1300, 300)[0] == "repeat"
    assert decide(alert, 5, 60, 1400, 300) == ("recovered", None)
    assert decide(None, 1e9, 0, 1000, 300) == (None, None)  # 0 means no alert


def test_supervisors_pass_the_workers_prefetch():
    """The worker's default (its prefetch budget sizes it below that); a supervisor's
    own "prefetch" is retired (tests/horizon/test_retired_keys.py)."""
    default = parse({"supervisors": {"s": {"queues": ["default"]}}})
    assert "--prefetch=64" in default.supervisors[0].worker_arguments()


def test_settings_are_validated():
    assert parse({"waits": {"default": 30}}).waits == {"redis:default": 30.0}
    with pytest.raises(HorizonConfigError, match="seconds >= 0"):
        parse({"waits": {"redis:default": -1}})
    with pytest.raises(HorizonConfigError, match="http"):
        parse({"notifications": ["ftp://x"]})
    with pytest.raises(HorizonConfigError, match="at most one http"):
        parse({"notifications": ["https://a", "https://b"]})
    assert parse({"notifications": "ops@example.com"}).notifications["mail"] == [
        "ops@example.com"]


def test_alert_fires_once_repeats_after_cooldown_then_recovers(settings, rclient, receiver):
    url, bodies = receiver
    settings.HORIZON = {**settings.HORIZON, "waits": {"redis:default": 60},
                        "notifications": ["ops@example.com", url]}
    from horizon.configuration.settings import horizon_settings

    seen = []

    def on_long(sender, **kw):
        seen.append(("long", kw["queue"], kw["repeat"]))

    def on_ok(sender, **kw):
        seen.append(("ok", kw["queue"], round(kw["lasted"])))
    long_wait_detected.connect(on_long)
    long_wait_recovered.connect(on_ok)
    try:
        monitor = WaitMonitor.from_config(horizon_settings(), rclient, owner="m", log=print)
        hold_back(30)
        now = time.time()
        assert monitor.tick(now, force=True) == []  # 30 s: under the limit
        connections.redis_driver("redis").clear("default")
        hold_back(120)
        [notice] = monitor.tick(now, force=True)
        assert notice.kind == "long" and notice.queue == "redis:default"
        assert 119 <= notice.seconds < 150
        assert monitor.tick(now + 10, force=True) == []  # still long: rate-limited
        assert monitor.tick(now + 100, force=True) == []
        # a second master (or a restarted one) reads the same state: no new first alert
        other = WaitMonitor.from_config(horizon_settings(), rclient, owner="n")
        assert other.tick(now + 120, force=True) == []
        [repeat] = monitor.tick(now + 301, force=True)
        assert repeat.kind == "long" and repeat.repeat
        connections.redis_driver("redis").clear("default")
        [recovered] = monitor.tick(now + 320, force=True)
        assert recovered.kind == "recovered" and round(recovered.lasted) == 320
        assert monitor.tick(now + 330, force=True) == []
    finally:
        long_wait_detected.disconnect(on_long)
        long_wait_recovered.disconnect(on_ok)

    assert [m.subject.split(":")[0] for m in mail.outbox] == [
        "[Horizon] Long wait on redis", "[Horizon] Long wait on redis",
        "[Horizon] redis"]
    assert mail.outbox[0].to == ["ops@example.com"]
    assert "recovered" in mail.outbox[2].subject
    assert [(t, b["event"], b["queue"], b["repeat"]) for t, b in bodies] == [
        ("application/json", "long_wait", "redis:default", False),
        ("application/json", "long_wait", "redis:default", True),
        ("application/json", "long_wait_recovered", "redis:default", False)]
    assert bodies[0][1]["threshold"] == 60 and bodies[0][1]["seconds"] >= 119
    assert seen == [("long", "redis:default", False), ("long", "redis:default", True),
                    ("ok", "redis:default", 320)]


def test_one_master_evaluates_per_interval_and_a_dead_webhook_does_not_break_it(
        settings, rclient):
    settings.HORIZON = {**settings.HORIZON, "waits": {"redis:default": 1},
                        "notifications": ["http://127.0.0.1:9/nothing"]}
    from horizon.configuration.settings import horizon_settings

    logged = []
    a = WaitMonitor.from_config(horizon_settings(), rclient, owner="a", log=logged.append)
    b = WaitMonitor.from_config(horizon_settings(), rclient, owner="b", log=logged.append)
    hold_back(10)
    now = time.time()
    assert len(a.tick(now)) == 1
    assert b.tick(now) == []  # the lock: b skips this interval
    assert any("webhook failed" in line for line in logged)


@pytest.mark.django_db(transaction=True)
def test_a_running_master_evaluates_long_waits(spawn_worker, receiver):
    """No cron: `manage.py horizon` itself checks latency and calls the webhook."""
    url, bodies = receiver
    extra = {"waits": {"redis:held": 2}, "notifications": [url]}
    master = spawn_worker(command="horizon", env={"HORIZON_TEST_EXTRA": json.dumps(extra)})
    hold_back(30, queue="held")  # a queue no worker serves
    wait_until(lambda: len(bodies) == 1, timeout=20, message="the long-wait webhook")
    assert bodies[0][1]["event"] == "long_wait" and bodies[0][1]["queue"] == "redis:held"
    connections.redis_driver("redis").clear("held")
    wait_until(lambda: len(bodies) == 2, timeout=20, message="the recovered webhook")
    assert bodies[1][1]["event"] == "long_wait_recovered"
    assert master.running(), master.output()
