"""Issue 32: the batch page counts from the batch's own counters and lists its failed
members from an index the settle script keeps, never reading every member's state on
each refresh (264 ms of Redis per refresh at 200k members). Real Redis; the members
hash is filled to 200k settled members directly (dispatching them would only slow the
test; the settle script writes the same hash)."""
import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from queueing import batch
from queueing.connections import redis_driver
from tests.testapp.jobs import batch_member

pytestmark = pytest.mark.django_db(transaction=True)
MEMBERS = 200_000


def redis_usec(rclient) -> int:
    """Microseconds Redis spent on commands since the last CONFIG RESETSTAT."""
    return sum(int(stats["usec"]) for name, stats in rclient.info("commandstats").items())


def test_a_refresh_of_a_200k_member_batch_reads_no_member_states(rclient):
    driver = redis_driver("redis")
    made = batch([batch_member.s(i) for i in range(3)]).allow_failures().dispatch()
    got = driver.reserve("default", 3, owner="test")
    driver.acknowledge(got.jobs[:1])
    for held in got.jobs[1:]:
        driver.delete(held, outcome="f")
    failed = sorted(json.loads(held.raw)["uuid"] for held in got.jobs[1:])
    members = driver.keys("default").batch_members(made.id)
    pipe = rclient.pipeline(transaction=False)
    for start in range(0, MEMBERS, 10_000):
        pipe.hset(members, mapping={f"extra-{n}": "s" for n in range(start, start + 10_000)})
    pipe.execute()
    assert rclient.hlen(members) > MEMBERS

    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get(f"/batches/{made.id}/").status_code == 200  # warm
    costs = []
    for _ in range(3):
        rclient.config_resetstat()
        response = client.get(f"/batches/{made.id}/", HTTP_HX_REQUEST="true")
        costs.append(redis_usec(rclient))
        body = response.content.decode()
        assert response.status_code == 200
        assert all(uuid in body for uuid in failed), "the failed members are listed"
    assert min(costs) < 10_000, f"Redis spent {costs} us per refresh"
