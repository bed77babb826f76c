"""horizon_list, horizon_supervisors and horizon_clear_metrics (Horizon's horizon:list,
horizon:supervisors and horizon:clear-metrics), against the Redis a master publishes to."""
import json
import time
from io import StringIO

import pytest
from django.core.management import call_command

from horizon import keys
from horizon.repositories import metrics
from tests.helpers import complete, publish

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_list_and_supervisors_as_tables_and_json(rclient):
    assert "No Horizon master is running." in run("horizon_list")
    assert "No supervisor is running." in run("horizon_supervisors")
    publish(rclient, processes={"high": 2, "default": 3})
    table = run("horizon_list")
    assert "web-1" in table and "4242" in table and "supervisor-1" in table
    [master] = json.loads(run("horizon_list", "--json"))
    assert (master["name"], master["pid"], master["status"], master["supervisors"]) == (
        "web-1", 4242, "running", ["supervisor-1"])
    assert "redis:high,default,low" in run("horizon_supervisors")
    [supervisor] = json.loads(run("horizon_supervisors", "--json"))
    assert (supervisor["master"], supervisor["process_count"], supervisor["balance"],
            supervisor["processes"]) == ("web-1", 5, "auto", {"high": 2, "default": 3})


def test_clear_metrics_empties_the_charts_and_keeps_prometheus_counting(rclient):
    from horizon.models import AuditEntry

    start = time.time() - 600
    for minute in range(3):
        complete(rclient, name="app.jobs.Report", now=start + minute * 60)
        metrics.take_snapshots(rclient, now=start + minute * 60 + 59)
    assert metrics.snapshots(rclient, "job", "app.jobs.Report")
    series = keys.prometheus_series("redis:default", "app.jobs.Report")
    rclient.hset(series, "done", 3)  # as workers count outcomes for /metrics
    rclient.sadd(keys.prometheus_series_index(), "redis:default|app.jobs.Report")
    assert "Cleared the metrics" in run("horizon_clear_metrics")
    assert metrics.snapshots(rclient, "job", "app.jobs.Report") == []
    assert metrics.measured(rclient, "job") == [] and metrics.measured(rclient, "queue") == []
    assert rclient.hget(series, "done") == b"3" and rclient.scard(keys.prometheus_series_index()) == 1
    assert AuditEntry.objects.filter(action="clear metrics").count() == 1
