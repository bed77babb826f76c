"""Who holds each lock on the Locks page: the owning job's state and a link to it.

An operator releases a lock when its owner is gone; the page used to show a bare uuid,
so deciding meant a search per lock. Each owner is looked up where its job can be (the
queues' uuid indexes, the failed store, the completed records: uuid_search.find). A
lookup costs a few Redis calls, so only the first OWNER_LOOKUPS locks of a refresh are
looked up; the rest link to a list search for the uuid, which goes to the job the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.http import urlencode

from horizon.dashboard.jobs import uuid_search
from horizon.queue_reads.queues import known_queues
from queueing.state.locks import HeldLock

OWNER_LOOKUPS = 50
STATE_WORDS = {"reserved": "running"}  # a reserved job holding a lock is running it


@dataclass(frozen=True, slots=True)
class Owner:
    state: str  # pending, delayed, running, failed, completed, "gone" or "" (not looked up)
    url: str  # the job's page, a search that goes to it, or "" when it is gone


def owners(locks: list[HeldLock]) -> dict[str, Owner]:
    """job uuid -> Owner, for every lock's owner."""
    refs = known_queues()
    found: dict[str, Owner] = {}
    for lock in locks:
        uuid = lock.job_uuid
        if uuid in found:
            continue
        if len(found) >= OWNER_LOOKUPS or uuid_search.kind(uuid) != "full":
            query = urlencode({"q": uuid})
            found[uuid] = Owner("", f"{reverse('horizon:jobs', args=['pending'])}?{query}")
            continue
        job = uuid_search.find(uuid, refs)
        found[uuid] = (Owner("gone", "") if job is None else
                       Owner(STATE_WORDS.get(job.state, job.state), uuid_search.job_url(job)))
    return found
