"""Find one job again from a link: by uuid, near where the list saw it.

A Redis connection finds a job by uuid through the uuid indexes its scripts keep
(``RedisDriver.locate``, queueing/lua/locate.lua): a bare job URL or a uuid search works
at any queue length. Entries the indexes do not know (pushed before they existed, or
by hand) are found as before: list links carry a hint (the index in a pending list, the
score in a delayed or reserved set); pending jobs only move towards the head as others
are taken, so the search reads from a little before the hint, and scored jobs are found
by their exact score. A database connection looks the uuid up directly (its driver's
``find``). Actions use the same lookup, so the browser never sends a payload back for
the server to trust.
"""
from __future__ import annotations

from dataclasses import dataclass

from horizon.queue_reads.queues import QueueRef, known_queues
from horizon.repositories import horizon_client, recent, unrun
from queueing import connections
from queueing.contract.roles import Inspector
from queueing.dispatching.preview import HEAD_BYTES, peek_entry
from queueing.models import FailedJob
from queueing.observability.safe_json import peek

LOOKBACK = 2000  # entries read before a pending job's last known index


@dataclass
class Found:
    state: str
    uuid: str
    data: dict
    ref: QueueRef | None = None
    raw: bytes | None = None
    score: float | None = None
    position: int | None = None
    completed: dict | None = None
    failed: FailedJob | None = None
    expired: dict | None = None  # the record of a job that expired unrun
    dropped: dict | None = None  # the record of a job dropped unrun, a model row gone


def _is(raw: bytes, uuid: str) -> bool:
    return uuid.encode() in raw and peek_entry(raw).get("uuid") == uuid


def _indexed(driver: Inspector, ref: QueueRef, uuid: str) -> Found | None:
    """The job as the uuid indexes place it; None when they do not know it."""
    found = driver.locate(ref.name, uuid)
    if found is None:
        return None
    state, raw, place = found
    if not _is(raw, uuid):
        return None
    if state == "pending":
        return Found("pending", uuid, peek(raw), ref, raw, position=int(place))
    return Found(state, uuid, peek(raw), ref, raw, score=place)


def locate(ref: QueueRef, uuid: str) -> Found | None:
    """Where the job is in one queue, whatever its state there (None when the indexes
    do not know it)."""
    return _indexed(connections.queue_driver(ref.connection), ref, uuid)


def locate_anywhere(uuid: str, refs: list[QueueRef]) -> Found | None:
    """A bare job link: the uuid looked up in every queue shown."""
    for ref in refs:
        found = locate(ref, uuid)
        if found is not None:
            return found
    return None


def find_pending(ref: QueueRef, uuid: str, at: int | None = None) -> Found | None:
    driver = connections.queue_driver(ref.connection)
    indexed = _indexed(driver, ref, uuid)
    if indexed is not None:
        return indexed if indexed.state == "pending" else None
    if driver.capabilities.find_by_uuid:  # a database connection looks it up directly
        for raw in driver.find("pending", ref.name, uuid):
            if _is(raw, uuid):
                return Found("pending", uuid, peek(raw), ref, raw, position=at)
        return None
    at = max(at or 0, 0)
    low = max(at - LOOKBACK, 0)
    # Scanned as previews (2,050 entries of megabytes each were read whole), then the one
    # that matches is read whole: actions hand its exact bytes back to Redis.
    for offset, cut in enumerate(driver.pending(ref.name, low, at + 50,
                                                preview=HEAD_BYTES)):
        if _is(cut, uuid):
            position = low + offset
            for raw in driver.pending(ref.name, position, position):
                if _is(raw, uuid):
                    return Found("pending", uuid, peek(raw), ref, raw, position=position)
    return None


def find_scored(state: str, ref: QueueRef, uuid: str, score: float | None = None) -> Found | None:
    driver = connections.queue_driver(ref.connection)
    if score is None:
        indexed = _indexed(driver, ref, uuid)
        if indexed is not None:
            return indexed if indexed.state == state else None
    if driver.capabilities.find_by_uuid:  # a database connection looks it up directly
        candidates = driver.find(state, ref.name, uuid)
    else:
        candidates = _scored_in_redis(driver, state, ref, score, uuid)
    for raw, found_score in candidates:
        if _is(raw, uuid):
            return Found(state, uuid, peek(raw), ref, raw, score=found_score)
    return None


def _scored_in_redis(driver: Inspector, state: str, ref: QueueRef, score: float | None,
                     uuid: str) -> list:
    if score is None:  # found among previews first, then read whole by its score
        listing = driver.delayed if state == "delayed" else driver.reserved
        found = [s for cut, s in listing(ref.name, 0, LOOKBACK - 1, preview=HEAD_BYTES)
                 if _is(cut, uuid)]
        if not found:
            return []
        score = found[0]
    return driver.entries_scored(state, ref.name, score)


def find_completed(uuid: str) -> Found | None:
    item = recent.find(horizon_client(), uuid)
    if item is None:
        return None
    return Found("completed", uuid, item.get("payload") or {}, completed=item)


def find_silenced(uuid: str) -> Found | None:
    """A silenced job's success (horizon/silencing.py): a completed record of its own."""
    item = recent.find(horizon_client(), uuid, silenced=True)
    if item is None:
        return None
    return Found("silenced", uuid, item.get("payload") or {}, completed=item)


def find_expired(uuid: str) -> Found | None:
    item = unrun.find(horizon_client(), "expired", uuid)
    if item is None:
        return None
    return Found("expired", uuid, item.get("payload") or {}, expired=item)


def find_dropped(uuid: str) -> Found | None:
    """A job dropped unrun because a model argument's row was gone."""
    item = unrun.find(horizon_client(), "dropped", uuid)
    if item is None:
        return None
    return Found("dropped", uuid, item.get("payload") or {}, dropped=item)


def find_failed(uuid: str) -> Found | None:
    row = FailedJob.objects.filter(uuid=uuid).first()
    if row is None:
        return None
    return Found("failed", uuid, peek(row.payload), failed=row)


def find(state: str, uuid: str, ref: QueueRef | None, *, at: int | None = None,
         score: float | None = None) -> Found | None:
    if state == "failed":
        return find_failed(uuid)
    if state == "completed":
        return find_completed(uuid)
    if state == "silenced":
        return find_silenced(uuid)
    if state == "expired":
        return find_expired(uuid)
    if state == "dropped":
        return find_dropped(uuid)
    if ref is None:
        return None
    if state == "pending":
        return find_pending(ref, uuid, at)
    return find_scored(state, ref, uuid, score)


LIVE = ("pending", "delayed", "reserved")  # states a job leaves on its own


def follow(uuid: str, ref: QueueRef | None, was: str) -> Found | None:
    """Where a job went after a page last saw it in state `was`: the states it can move
    to next are read first (reserved, then back to delayed or pending for a retry), and
    the stores where jobs settle last, so a job moving on while we look is still caught.
    Tried twice before giving up, for a job that moved between two reads."""
    for _ in range(2):
        if ref is None:
            found = locate_anywhere(uuid, known_queues())
            if found is not None:
                return found
        if ref is not None:
            for state in ("reserved", "delayed", "pending"):
                if state == was and state != "reserved":  # a renewed lease moves a
                    continue  # running job's score: it is still reserved, found by uuid
                found = (find_pending(ref, uuid) if state == "pending"
                         else find_scored(state, ref, uuid))
                if found is not None:
                    return found
        found = (find_failed(uuid) or find_completed(uuid) or find_silenced(uuid)
                 or find_expired(uuid) or find_dropped(uuid))
        if found is not None:
            return found
    return None
