"""{horizon}:prom:series is bounded (issue 40, item 7): the master's trim drops the
series of jobs that counted no outcome for HORIZON["trim"]["prometheus"] minutes (a job
renamed or deleted, a queue removed); live series stay, and a series counted before
last-seen times existed gets a full window."""
import time

import pytest

from horizon import keys
from horizon.configuration.settings import horizon_settings
from horizon.repositories import counters, trimmed
from horizon.supervisor.trimming import Trimmer
from queueing.drivers.redis.replies import as_str
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True)
RECORD = "redis:default|tests.testapp.jobs.record"
EXPLODE = "redis:default|tests.testapp.jobs.explode"


def series(rclient):
    return {as_str(m) for m in rclient.smembers(keys.prometheus_series_index())}


def test_series_of_jobs_gone_quiet_are_dropped_live_ones_stay(settings, rclient,
                                                               spawn_worker):
    jobs.record.delay("a")
    jobs.explode.delay("b")
    worker = spawn_worker("redis", "--queue=default", "--stop-when-empty", "--sleep=0")
    assert worker.wait() == 0, worker.output()
    assert {RECORD, EXPLODE} <= series(rclient)
    seen = {as_str(k): v for k, v in rclient.zrange(keys.prometheus_seen(), 0, -1,
                                                    withscores=True)}
    assert abs(seen[RECORD] - time.time()) < 60 and abs(seen[EXPLODE] - time.time()) < 60
    # the explode job was last counted eight days ago; record keeps counting
    rclient.zadd(keys.prometheus_seen(), {EXPLODE: time.time() - 8 * 86400})
    rclient.hset(keys.snapshot_cursor(), EXPLODE, "[1, 0, 0.0]")
    trimmer = Trimmer(horizon_settings(), rclient, owner="m1", log=lambda _: None)
    assert trimmer.tick(now=0)["prometheus_series"] == 1
    assert RECORD in series(rclient) and EXPLODE not in series(rclient)
    assert not rclient.exists(keys.prometheus_series("redis:default",
                                                     "tests.testapp.jobs.explode"))
    assert rclient.zscore(keys.prometheus_seen(), EXPLODE) is None
    assert not rclient.hexists(keys.snapshot_cursor(), EXPLODE)
    assert rclient.exists(keys.prometheus_series("redis:default", "tests.testapp.jobs.record"))
    assert trimmed.totals(rclient)["prometheus_series"] == 1
    assert {s.job for s in counters.read_all(rclient)} == {"tests.testapp.jobs.record"}


def test_a_series_from_before_last_seen_times_gets_a_full_window(rclient):
    rclient.sadd(keys.prometheus_series_index(), "redis:old|app.jobs.legacy")
    rclient.hset(keys.prometheus_series("redis:old", "app.jobs.legacy"), "processed", 3)
    assert counters.prune(rclient, 60, 100) == 0
    assert rclient.zscore(keys.prometheus_seen(), "redis:old|app.jobs.legacy") is not None
    assert counters.prune(rclient, 60, 100, now=time.time() + 3601) == 1
    assert "redis:old|app.jobs.legacy" not in series(rclient)


def test_a_bad_prometheus_trim_setting_is_reported(settings):
    """Retired in 0.3 (a constant, 7 days), the key is still read, and checked, until 0.4."""
    from horizon.configuration.settings import HorizonConfigError

    settings.HORIZON = {**settings.HORIZON, "trim": {"prometheus": 0}}
    with pytest.warns(DeprecationWarning, match="retired"), \
            pytest.raises(HorizonConfigError, match="trim prometheus must be a number"):
        horizon_settings()
