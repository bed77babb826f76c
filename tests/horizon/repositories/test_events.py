"""Issue 51, item 2: the events drawn as markers on the charts are one bounded sorted set
on Horizon's Redis: trimmed by count and by age at every write, in the app's namespace,
masked, stored once however many masters notice the same moment, and a write to a Redis
that is away is dropped without raising (the act it records must go on)."""
import socket
import time

import pytest
import redis
from django.conf import settings
from django.test import override_settings

from horizon import keys
from horizon.repositories import events

pytestmark = pytest.mark.django_db


def stored(rclient) -> list[events.Event]:
    return [events.parse(raw) for raw in rclient.zrange(keys.events(), 0, -1)]


def test_an_event_is_read_back_in_its_range_oldest_first(rclient):
    now = time.time()
    assert events.record("terminate", "terminate sent to web-1", at=now - 30)
    assert events.record("outage", "Redis away", at=now - 300, until=now - 200)
    found = events.between(rclient, now - 3600)
    assert [(e.kind, e.at, e.until) for e in found] == [
        ("outage", round(now - 300, 3), round(now - 200, 3)),
        ("terminate", round(now - 30, 3), None)]
    assert found[1].title == "Terminate"
    assert events.between(rclient, now - 100) == found[1:]
    assert [e.kind for e in events.recent(rclient)] == ["terminate", "outage"]


def test_the_set_is_trimmed_by_count_at_every_write(rclient, monkeypatch):
    monkeypatch.setattr(events, "KEEP_COUNT", 20)
    now = time.time()
    for i in range(35):
        assert events.record("restart", f"deploy {i}", at=now - 35 + i)
    assert rclient.zcard(keys.events()) == 20
    assert [e.text for e in stored(rclient)][0] == "deploy 15"  # the oldest 15 went


def test_the_set_is_trimmed_by_age_at_every_write(rclient):
    now = time.time()
    events.record("master_start", "too old", at=now - events.KEEP_SECONDS - 60)
    events.record("master_start", "kept", at=now - events.KEEP_SECONDS + 3600)
    assert [e.text for e in stored(rclient)] == ["kept"]


def test_the_same_moment_noticed_twice_is_stored_once(rclient):
    now = time.time()
    for _ in range(3):  # three masters noticing one Sentinel switch
        events.record("sentinel", "primary of 'redis' is now 10.0.0.2:6379", at=now - 5)
    assert len(stored(rclient)) == 1


def test_event_text_is_masked_and_bounded(rclient):
    events.record("outage", "redis://:hunter2@db.internal:6379/0 did not answer\n" + "x" * 500)
    (event,) = stored(rclient)
    assert "hunter2" not in event.text and "\n" not in event.text
    assert len(event.text) <= events.TEXT_LIMIT


def test_the_key_follows_the_namespace(rclient):
    with override_settings(QUEUE={**settings.QUEUE, "namespace": "app-a"}):
        assert keys.events() == "app-a:{horizon}:events"
        events.record("terminate", "in app-a")
        assert [e.text for e in events.recent(rclient)] == ["in app-a"]
    assert not rclient.exists(keys.events()), "nothing written outside the namespace"
    assert rclient.zcard("app-a:{horizon}:events") == 1


def test_a_write_to_a_redis_that_is_away_is_dropped_without_raising():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    away = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=0.5)
    started = time.monotonic()
    assert events.record("terminate", "sent", client=away) is False
    # a refused connection fails at once; 5 s is far above it even on a loaded machine
    assert time.monotonic() - started < 5


def test_a_member_that_is_not_an_event_is_skipped(rclient):
    rclient.zadd(keys.events(), {"not json": time.time(), '{"at": 1}': time.time()})
    events.record("restart", "ok")
    assert [e.text for e in events.recent(rclient)] == ["ok"]
