"""Member results a chord's callback needs: kept only for members that carry the
``keepResult`` mark (chord members; the last link of a chain member), nowhere else.

They are kept in the one result store (queueing/results/store.py, issue 50): its
encoder, its size-cap rule (here the chord's ``result_limit``), its sealing and its key
layout, ``queueing:result:{BATCH_ID}:members`` (member position -> JSON), on the control
store, for ``RESULTS_TTL`` after the last write; the callback's job drops it. One hash per
chord rather than one record per member: the callback reads every member's result by
position in one command, and a chain member's result is its last link's, whose uuid the
chord never learns. A result past the limit (or one JSON cannot hold) fails its member
with a clear error, so the callback never runs with a result missing. A member that never
ran but counts as succeeded (expired, skipped) keeps None (``keep_unrun``). A sealed
member's result is kept sealed, so a sealed workflow leaves nothing in clear
(docs/encrypted-jobs.md).

Until 0.4 the callback also reads the hash 0.2 workers wrote,
``queueing:chord:{BATCH_ID}:results`` (``LEGACY_KEY``), for chords in flight across an
upgrade (CHANGELOG.md).
"""
from __future__ import annotations

import json
from typing import Any

from queueing.entries import encryption
from queueing.entries.batch_tag import of_data
from queueing.errors import QueueError
from queueing.middleware.keys import control_key
from queueing.middleware.store import state_client
from queueing.results import store
from queueing.results.store import ResultTooLarge

KEEP_FIELD = "keepResult"  # {"index": member position, "limit": bytes}
DEFAULT_RESULT_LIMIT = 64 * 1024  # bytes of JSON one member's result may take
RESULTS_TTL = 7 * 24 * 3600  # seconds kept results outlive their last write

__all__ = ["DEFAULT_RESULT_LIMIT", "KEEP_FIELD", "RESULTS_TTL", "ResultTooLarge", "encode_result",
           "fired_key", "keep", "keep_unrun", "read", "results_key"]


def results_key(batch_id: str) -> str:
    return store.members_key(batch_id)


def legacy_key(batch_id: str) -> str:
    """Where 0.2 kept a chord's results: read until 0.4 (CHANGELOG.md)."""
    return f"{control_key('chord', batch_id)}:results"


def fired_key(batch_id: str) -> str:
    """Set once the chord's callback was dispatched: a callback job run twice (its worker
    died after dispatching) does not dispatch it twice."""
    return f"{control_key('chord', batch_id)}:fired"


def encode_result(name: str, value: Any, limit: int) -> str:
    """The result store's encoding, capped at the chord's result_limit."""
    return store.encode_value(name, value, limit,
                              cap=f"its chord's result_limit of {limit} bytes (or raise it)")


def keep(driver: Any, job: Any, value: Any) -> None:
    """Store `job`'s result for its chord (the caller checked the mark); a chain's link
    keeps nothing until the last one."""
    if job.chain:
        return
    mark = job.data.get(KEEP_FIELD)
    tag = of_data(job.data)
    if not isinstance(mark, dict) or tag is None:
        return
    text = encode_result(job.job, value, int(mark.get("limit") or DEFAULT_RESULT_LIMIT))
    store.keep_member(state_client(driver), tag.id, int(mark.get("index", 0)),
                      store.seal(text, encryption.is_sealed(job.data)), RESULTS_TTL)


def keep_unrun(driver: Any, job: Any) -> None:
    """A chord member settled without running (expired, skipped by its middleware, its
    model row gone; any link of a chain member: the chain ends there) counts as
    succeeded for its batch, so its callback will run: None goes in its place. Written
    before the member is counted, so the callback that count may release reads it."""
    mark = job.data.get(KEEP_FIELD)
    tag = of_data(job.data)
    if not isinstance(mark, dict) or tag is None:
        return
    store.keep_member(state_client(driver), tag.id, int(mark.get("index", 0)), "null",
                      RESULTS_TTL)


def read(client: Any, batch_id: str, total: int) -> list[Any]:
    """The `total` members' results, in member order; an error naming the missing ones."""
    found = store.read_members(client, batch_id)
    if len(found) < total:  # a chord in flight across the upgrade from 0.2 (until 0.4)
        legacy = {int(k): store.opened(v) for k, v in client.hgetall(legacy_key(batch_id)).items()}
        found = {**legacy, **found}
    missing = [i for i in range(total) if i not in found]
    if missing:
        raise QueueError(f"chord {batch_id}: no result kept for member(s) {missing[:10]} of "
                         f"{total} (expired, or written by an older worker)")
    return [json.loads(found[i]) for i in range(total)]


def drop(client: Any, batch_id: str) -> None:
    """The callback was sent: its members' results go (and 0.2's hash, until 0.4)."""
    client.delete(results_key(batch_id))
    client.delete(legacy_key(batch_id))  # one key per DEL: two slots on a cluster
