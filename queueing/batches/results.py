"""Member results a chord's callback needs: kept only for members that carry the
``keepResult`` mark (chord members; the last link of a chain member), nowhere else.

A kept result is JSON, at most the chord's ``result_limit`` bytes: a result past it (or
one JSON cannot hold) fails its member with a clear error, so the chord's callback never
runs with a result missing. A member that never ran but counts as succeeded (expired,
skipped) keeps None (``keep_unrun``). Results live in one Redis hash per chord,
``queueing:chord:{BATCH_ID}:results`` (member index -> JSON), on the control store
(queueing/middleware/store.py), for a week at most; the callback's job drops it. A
sealed member's result is kept sealed (``SEALED_MARK`` + ``encryption.seal_text``), so
a sealed workflow leaves nothing in clear (docs/encrypted-jobs.md).
"""
from __future__ import annotations

import json
from typing import Any

from queueing.entries import encryption
from queueing.entries.batch_tag import of_data
from queueing.errors import QueueError
from queueing.middleware.keys import control_key
from queueing.middleware.store import state_client

KEEP_FIELD = "keepResult"  # {"index": member position, "limit": bytes}
DEFAULT_RESULT_LIMIT = 64 * 1024  # bytes of JSON one member's result may take
RESULTS_TTL = 7 * 24 * 3600  # seconds kept results outlive their last write
SEALED_MARK = "sealed:"  # a kept result sealed with the key (no JSON text starts so)


class ResultTooLarge(QueueError):
    """A chord member's result is over its chord's result_limit (or is not JSON)."""


def results_key(batch_id: str) -> str:
    return f"{control_key('chord', batch_id)}:results"


def fired_key(batch_id: str) -> str:
    """Set once the chord's callback was dispatched: a callback job run twice (its worker
    died after dispatching) does not dispatch it twice."""
    return f"{control_key('chord', batch_id)}:fired"


def encode_result(name: str, value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ResultTooLarge(f"{name} returned {type(value).__name__}, which a chord cannot "
                             f"pass to its callback (results must be JSON: {exc})") from None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ResultTooLarge(f"{name} returned {size} bytes of JSON, over its chord's "
                             f"result_limit of {limit} bytes: store it elsewhere and return "
                             "its id, or raise result_limit")
    return text


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
    if encryption.is_sealed(job.data):
        text = SEALED_MARK + encryption.seal_text(text)
    client = state_client(driver)
    key = results_key(tag.id)
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, str(int(mark.get("index", 0))), text)
    pipe.expire(key, RESULTS_TTL)
    pipe.execute()


def keep_unrun(driver: Any, job: Any) -> None:
    """A chord member settled without running (expired, skipped by its middleware, its
    model row gone; any link of a chain member: the chain ends there) counts as
    succeeded for its batch, so its callback will run: None goes in its place. Written
    before the member is counted, so the callback that count may release reads it."""
    mark = job.data.get(KEEP_FIELD)
    tag = of_data(job.data)
    if not isinstance(mark, dict) or tag is None:
        return
    client = state_client(driver)
    pipe = client.pipeline(transaction=False)
    pipe.hset(results_key(tag.id), str(int(mark.get("index", 0))), "null")
    pipe.expire(results_key(tag.id), RESULTS_TTL)
    pipe.execute()


def read(client: Any, batch_id: str, total: int) -> list[Any]:
    """The `total` members' results, in member order; an error naming the missing ones."""
    stored = client.hgetall(results_key(batch_id))
    found = {int(k): v for k, v in stored.items()}
    missing = [i for i in range(total) if i not in found]
    if missing:
        raise QueueError(f"chord {batch_id}: no result kept for member(s) {missing[:10]} of "
                         f"{total} (expired, or written by an older worker)")
    return [json.loads(_opened(found[i])) for i in range(total)]


def _opened(stored: bytes | str) -> str:
    text = stored.decode("utf-8", "surrogatepass") if isinstance(stored, bytes) else stored
    if text.startswith(SEALED_MARK):
        return encryption.open_text(text[len(SEALED_MARK):])
    return text
