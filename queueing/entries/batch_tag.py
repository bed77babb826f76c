"""The member tag a batch job's payload carries, read back from a reserved entry.

A member's payload has ``"batch": {"id": .., "queue": .., "member": ..}``: the batch's
id, the queue whose hash tag holds the batch's keys (its callback queue), and the
member id (the job's uuid; for a chain, the first link's uuid, carried by every link).
Only entries holding the bytes ``"batch":{`` are decoded here, so a job outside a batch
pays one substring search and nothing else.
"""
from __future__ import annotations

import json
import re
from typing import Any

from queueing.contract.records import record

FIELD = "batch"
CALLBACK_FIELD = "batchCallback"  # a callback's payload: {"id", "queue", "kind"}
_MARK = b'"batch":{'
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_QUEUE = re.compile(r"^[^{}\s]{1,200}$")


@record(frozen=True, slots=True)
class BatchTag:
    id: str
    queue: str
    member: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "queue": self.queue, "member": self.member}


@record(frozen=True, slots=True)
class Settling:
    """What settling one reserved member tells its batch: who, and whether its success
    counts (a chain's link counts only when it is the last one)."""

    tag: BatchTag
    job_uuid: str
    last_link: bool


SKIPPED = "k"  # an outcome: the job was skipped by its own middleware


def counted_as(found: Settling | None, outcome: str) -> str | None:
    """The outcome a settled entry counts in its batch ("s", "f", "c"), or None when it
    counts nothing: a success counts only for a chain's last link, but a skip counts as
    the member's success whichever link it is, since the chain ends there (its later
    links are never dispatched; counting only last links left such a batch unfinished,
    its ``then`` and ``finally`` never run)."""
    if found is None:
        return None
    if outcome == SKIPPED:
        return "s"
    if outcome == "s" and not found.last_link:
        return None
    return outcome


def from_value(value: Any) -> BatchTag | None:
    """A tag from a payload's ``batch`` value, or None when it is not a valid one."""
    if not isinstance(value, dict):
        return None
    batch_id, queue, member = value.get("id"), value.get("queue"), value.get("member")
    if not (isinstance(batch_id, str) and _ID.match(batch_id) and isinstance(queue, str)
            and _QUEUE.match(queue) and isinstance(member, str) and _ID.match(member)):
        return None
    return BatchTag(batch_id, queue, member)


def of_data(data: dict[str, Any]) -> BatchTag | None:
    return from_value(data.get(FIELD))


# The shape dispatch writes: the tag is the payload's last key, after an empty chain
# (a chain's last link, or no chain); a reserved entry's uuid follows pop's stamps.
_TAIL = re.compile(rb'"batch":\{"id":"([A-Za-z0-9_-]{1,64})","queue":"([^"{}\\\s]{1,200})",'
                   rb'"member":"([A-Za-z0-9_-]{1,64})"\}\}')
_UUID = re.compile(rb'\{[^{}\[\]]*?"uuid":"([^"\\]{1,64})"')
_LAST_LINK = b',"chain":[],'


def settling(raw: bytes | str) -> Settling | None:
    """The batch member a reserved entry is, or None (not in a batch, or unreadable).
    Entries in the shape dispatch writes are read with two anchored matches; any other
    is decoded (a chain's link with links left, a payload written by other code)."""
    blob = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    at = blob.rfind(_MARK)
    if at < 0:
        return None
    tail = _TAIL.match(blob, at)
    if tail is not None and tail.end() == len(blob) and \
            blob[at - len(_LAST_LINK):at] == _LAST_LINK:
        uuid = _UUID.match(blob)
        if uuid is not None:
            return Settling(BatchTag(tail.group(1).decode(), tail.group(2).decode(),
                                     tail.group(3).decode()), uuid.group(1).decode(), True)
    try:
        data = json.loads(blob)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    tag = of_data(data)
    if tag is None:
        return None
    job_uuid = data.get("uuid")
    return Settling(tag, job_uuid[:64] if isinstance(job_uuid, str) else "",
                    not data.get("chain"))
