"""A uuid in any list's search box goes to its job, whatever its state.

A full uuid is looked up where each state keeps it: the uuid indexes of every queue
shown (pending, delayed, reserved: RedisDriver.locate), the failed store (its uuid
column) and the completed records (one HGET). A uuid prefix of 8 or more characters,
the form logs show, is matched against a bounded part of the same indexes (the first
``PREFIX_READ`` of each: the next jobs to run, the soonest due; one small script per
queue, queueing/drivers/redis/lua/uuid_prefix.lua), the reserved sets (bounded), the
failed store (an indexed prefix query) and the completed records' keys (at most
``COMPLETED_SCANS`` HSCAN calls): when one job matches, the search goes to it; several,
and the list's own scan shows them. A full uuid searched on its own state's list stays
there, as that list's one row.

Why bounded: the prefix search ran ZSCAN MATCH over each queue's whole index, and the
list repeats its search on every 2 s refresh: at 1,000,000 indexed jobs that cost Redis
3.4 s a request, which any viewer could start (issue 48). A job deeper in a queue than
the bound is still found by its full uuid (an O(log N) lookup).
"""
from __future__ import annotations

import re

from django.urls import reverse
from django.utils.http import urlencode

from horizon import keys
from horizon.dashboard.jobs import lookup
from horizon.queue_reads.queues import QueueRef
from horizon.repositories import horizon_client
from queueing import connections
from queueing.dispatching.preview import HEAD_BYTES, peek_entry
from queueing.drivers.state_store import as_str
from queueing.models import FailedJob

FULL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PREFIX = re.compile(r"[0-9a-f]{8}[0-9a-f-]{0,27}")
MIN_PREFIX = 8
RESERVED_READ = 500
COMPLETED_SCANS = 5  # HSCAN calls over the completed records (each ~1,000 fields)


def kind(needle: str) -> str:
    """"full", "prefix" (8+ characters of a uuid) or "" (pure)."""
    needle = needle.strip().lower()
    if FULL.fullmatch(needle):
        return "full"
    return "prefix" if PREFIX.fullmatch(needle) else ""


def find(uuid: str, refs: list[QueueRef]) -> lookup.Found | None:
    """The job `uuid` wherever it is: a queue's live states, then the failed store and
    the completed records."""
    return (lookup.locate_anywhere(uuid, refs) or lookup.find_failed(uuid)
            or lookup.find_completed(uuid) or lookup.find_silenced(uuid))


def matches(prefix: str, refs: list[QueueRef], limit: int = 2) -> list[str]:
    """Up to `limit` uuids starting with `prefix`, from the indexes of every state."""
    found: list[str] = []

    def add(uuid: str) -> bool:
        if uuid.startswith(prefix) and uuid not in found:
            found.append(uuid)
        return len(found) >= limit

    for ref in refs:
        driver = connections.queue_driver(ref.connection)
        for indexed in driver.uuids_with_prefix(ref.name, prefix, limit):
            if add(indexed):
                return found
        for raw, _score in driver.reserved(ref.name, 0, RESERVED_READ - 1, preview=HEAD_BYTES):
            held = peek_entry(raw).get("uuid")
            if isinstance(held, str) and add(held):
                return found
    for uuid in FailedJob.objects.filter(uuid__startswith=prefix).values_list(
            "uuid", flat=True)[:limit]:
        if add(str(uuid)):
            return found
    client, cursor = horizon_client(), 0
    for _ in range(COMPLETED_SCANS):
        cursor, fields = client.hscan(keys.completed_records(), cursor, match=f"{prefix}*",
                                      count=1000)
        for member in fields:
            if add(as_str(member)):
                return found
        if not cursor:
            break
    return found


def jump(needle: str, refs: list[QueueRef], listed: str = "") -> str | None:
    """The job page a search for `needle` on the `listed` state's list goes to, or None
    (the list searches as before, and shows a full uuid of its own state as its row)."""
    needle = needle.strip().lower()
    what = kind(needle)
    if not what:
        return None
    uuid = needle
    if what == "prefix":
        candidates = matches(needle, refs)
        if len(candidates) != 1:
            return None
        uuid = candidates[0]
    found = find(uuid, refs)
    if found is None or (what == "full" and found.state == listed):
        return None
    return job_url(found)


def job_url(found: lookup.Found) -> str:
    """A job page's URL, with the hint that finds the job fast."""
    query = {"queue": found.ref.label} if found.ref is not None else {}
    if found.state == "pending" and found.position is not None:
        query["at"] = str(found.position)
    elif found.score is not None:
        query["score"] = repr(found.score)
    url = reverse("horizon:job", args=[found.state, found.uuid])
    return f"{url}?{urlencode(query)}" if query else url
