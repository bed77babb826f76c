"""Issue 38 on a database connection: the per-job control rows it leaves (exception
counters, cancel requests) are trimmed by age like the Redis driver's keys expire."""
import time

import pytest

from horizon.configuration.settings import horizon_settings
from horizon.supervisor.trimming import Trimmer
from queueing import connections
from queueing.models import ControlValue
from tests.conftest import WORKER_DATABASES

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def test_old_control_rows_go_newer_ones_and_shared_values_stay(dbconn, rclient):
    driver = connections.driver(dbconn)
    alias = driver.alias
    for i in range(30):
        driver.count_exception(f"old-{i}")
        driver.request_cancel(f"old-{i}", by="test")
    driver.count_exception("fresh")
    driver.broadcast_restart(123.0)  # a shared value: never trimmed
    ControlValue.objects.using(alias).exclude(key__contains="fresh").update(
        updated_at=time.time() - 2 * 86400)
    ControlValue.objects.using(alias).create(key="exceptions:before-0007", value="1")

    assert driver.prune_control(time.time() - 86400, chunk=7) == 60
    left = set(ControlValue.objects.using(alias).values_list("key", flat=True))
    assert "exceptions:fresh" in left and "exceptions:before-0007" in left, \
        "a row written before 0007 is stamped, then kept one retention"
    assert not any(k.startswith(("exceptions:old", "cancel:old")) for k in left)
    assert driver.last_restart() == 123.0

    ControlValue.objects.using(alias).filter(key="exceptions:fresh").update(
        updated_at=time.time() - 2 * 86400)
    trimmer = Trimmer(horizon_settings(), rclient, owner="m1", log=lambda _: None)
    assert trimmer.tick(now=0)["database_control"] >= 1
    assert not ControlValue.objects.using(alias).filter(key="exceptions:fresh").exists()
