"""What a database-driver delivery looks like to the worker: pure string functions.

The database keeps a job's payload as dispatched and counts deliveries in its
``attempts`` column. On each delivery the worker gets the payload with that count, the
delivery's token and the reserving worker stamped at the front, the same shape the Redis
driver's pop script produces, so the worker cannot tell the two drivers apart. An entry
that does not start with ``{"attempts":<digits>,`` (hand-written, truncated, not JSON)
is wrapped whole instead, so the worker fails it as malformed at its first delivery
instead of looping on it.
"""
from __future__ import annotations

import json
import re

# {"attempts":N, then optionally a stamp of an earlier delivery, which is replaced.
_FRONT = re.compile(
    r'^\{"attempts":\d+,'
    r'(?:"reservation":"[^"\\]*",)?'
    r'(?:"reservedBy":"(?:[^"\\]|\\.)*",)?'
)


def token_of(row_id: int, attempts: int) -> str:
    """One delivery's name: a row is delivered once per value of its attempts column."""
    return f"{row_id}.{attempts}"


def parse_token(token: str) -> tuple[int, int]:
    """(row id, attempts) from a token; ValueError for anything else."""
    row_id, _, attempts = token.partition(".")
    return int(row_id), int(attempts)


def stamp(payload: str, attempts: int, token: str = "", owner: str = "") -> str:
    """The payload as delivered: attempts from the column, then token and owner."""
    head = f'{{"attempts":{attempts},'
    if token:
        head += f'"reservation":{json.dumps(token)},'
    if owner:
        head += f'"reservedBy":{json.dumps(owner)},'
    front = _FRONT.match(payload)
    if front is not None:
        return head + payload[front.end():]
    return head + f'"wrapped":{json.dumps(payload)}}}'
