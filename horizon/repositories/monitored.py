"""Monitored tags: the tags operators watch, and each watched tag's jobs.

Laravel Horizon's Monitoring page, in Redis: a set of watched tags; for each, a zset of
its jobs' uuids (scored by when the job was first recorded: its dispatch, for a job
dispatched while the tag was watched), a hash of one small JSON record per job (name,
queue, the last status a recorder saw, when), and a zset of the ones that failed (for
the failure count without reading every record). Records are written by the
``record_monitored`` script, which also drops jobs older than ``trim.monitored``
minutes; stopping a tag deletes its jobs, as Horizon does.

The live state of a listed job (pending, delayed, running) is not written here: the
page reads it from the queue's uuid index when it shows the job (monitor_states.py),
so a job's reservation costs nothing extra.
"""
from __future__ import annotations

import json
import unicodedata

from horizon import keys
from queueing.drivers.state_store import RedisClient, as_str, script_for
from queueing.observability.safe_json import peek

TAG_LIMIT = 200  # characters: a watched tag is shown, linked and used in key names
# Tags watched at most. Why a cap: every dispatch checks its tags against the set and the
# Monitoring page lists each with two counts; 20,000 watched tags made the page 13.5 MB
# and 15-25 s to load (issue 48). A constant, not a setting: a hundred tags is more than
# an operator reads on one page, and a tag for every tenant belongs in the job lists'
# tag filter instead.
MAX_WATCHED = 100
WATCH_SCRIPT = "watch_tag"


class BadTag(ValueError):
    """A tag that cannot be watched (empty, too long, or with control characters)."""


class TooManyTags(BadTag):
    """MAX_WATCHED tags are watched already."""


def checked_tag(value: object) -> str:
    """`value` as a tag to watch (pure): a non-empty string of at most TAG_LIMIT
    characters, without control characters; surrounding spaces dropped. Any other
    character is allowed (``auth.User:42``, ``tenant/acme``): URLs quote it."""
    if not isinstance(value, str) or not value.strip():
        raise BadTag("a tag to watch must be a non-empty string")
    tag = value.strip()
    if len(tag) > TAG_LIMIT:
        raise BadTag(f"a tag to watch has at most {TAG_LIMIT} characters, got {len(tag)}")
    if any(unicodedata.category(char) == "Cc" for char in tag):
        raise BadTag("a tag to watch cannot hold control characters (newlines, tabs)")
    return tag


def watch(client: RedisClient, tag: str) -> bool:
    """Start watching `tag`; False when it already was; TooManyTags when MAX_WATCHED
    tags are watched (checked and added in one script)."""
    added = int(script_for(client, WATCH_SCRIPT, package="horizon")(
        keys=[keys.monitoring()], args=[checked_tag(tag), MAX_WATCHED]))
    if added < 0:
        raise TooManyTags(f"at most {MAX_WATCHED} tags are watched at once, and "
                          f"{MAX_WATCHED} are: stop watching one first (to follow many "
                          "tenants or users, filter the job lists by tag instead)")
    return bool(added)


def stop(client: RedisClient, tag: str) -> bool:
    """Stop watching `tag` and forget its jobs; False when it was not watched."""
    # In this order, without MULTI (a cluster pipeline may refuse one): once the tag is
    # out of the set, the recording script writes nothing more for it.
    pipe = client.pipeline(transaction=False)
    pipe.srem(keys.monitoring(), tag)
    for key in (keys.monitored(tag), keys.monitored_records(tag), keys.monitored_failed(tag)):
        pipe.delete(key)  # one key a DEL: a cluster pipeline refuses several
    return bool(pipe.execute()[0])


def watched(client: RedisClient) -> list[str]:
    """Every watched tag, sorted."""
    return sorted(as_str(tag) for tag in client.smembers(keys.monitoring()))


def watched_total(client: RedisClient) -> int:
    return int(client.scard(keys.monitoring()))


def summaries(client: RedisClient, limit: int | None = None) -> list[tuple[str, int, int]]:
    """(tag, jobs kept, of them failed) for every watched tag, sorted by tag; the first
    `limit` only when given (a set filled before MAX_WATCHED existed may hold more)."""
    tags = watched(client)[:limit] if limit is not None else watched(client)
    if not tags:
        return []
    pipe = client.pipeline(transaction=False)
    for tag in tags:
        pipe.zcard(keys.monitored(tag))
        pipe.zcard(keys.monitored_failed(tag))
    counts = pipe.execute()
    return [(tag, int(counts[2 * i]), int(counts[2 * i + 1])) for i, tag in enumerate(tags)]


def count(client: RedisClient, tag: str) -> int:
    return client.zcard(keys.monitored(tag))


def jobs(client: RedisClient, tag: str, start: int = 0, stop: int = 24) -> list[dict]:
    """The tag's jobs, newest first, by rank range: each record with its uuid (a job
    whose record is missing is listed with its uuid alone)."""
    uuids = [as_str(uuid) for uuid in client.zrevrange(keys.monitored(tag), start, stop)]
    if not uuids:
        return []
    found = []
    for uuid, raw in zip(uuids, client.hmget(keys.monitored_records(tag), uuids)):
        record = peek(raw) if raw else {}
        found.append({**(record if isinstance(record, dict) else {}), "uuid": uuid})
    return found


def record_of(job, label: str, status: str, at: float, runtime_ms: float | None = None) -> dict:
    """What is kept of a job on a tag's list (pure): its name, queue ("connection:queue"),
    the status a recorder saw and when, and its runtime once it ran."""
    record = {"name": job.job, "queue": label, "status": status, "at": at}
    if runtime_ms is not None:
        record["runtime_ms"] = runtime_ms
    return record


RECORD_SCRIPT = "record_monitored"  # in horizon/lua/


def record_keys_args(*, tag: str, uuid: str, status: str, record: dict, now: float,
                     keep_seconds: int, keep_count: int = 100_000) -> tuple[list, list]:
    """The keys and arguments of the script keeping one job on one watched tag's list
    (pure: the sync call below and async dispatch's share them)."""
    return ([keys.monitoring(), keys.monitored(tag), keys.monitored_records(tag),
             keys.monitored_failed(tag)],
            [tag, uuid, status, json.dumps(record, separators=(",", ":")), now, keep_seconds,
             keep_count])


def record_call(client: RedisClient, *, tag: str, uuid: str, status: str, record: dict,
                now: float, keep_seconds: int, keep_count: int = 100_000):
    """The script call keeping one job on one watched tag's list (to run now or in a
    worker's pipeline)."""
    keys_, args = record_keys_args(tag=tag, uuid=uuid, status=status, record=record,
                                   now=now, keep_seconds=keep_seconds, keep_count=keep_count)
    return (record_script(client), keys_, args)


def record_script(client: RedisClient):
    """The recording script, bound to a sync client."""
    return script_for(client, RECORD_SCRIPT, package="horizon")


def trim(client: RedisClient, tag: str, keep_minutes: float, now: float,
         keep_count: int | None = None, limit: int = 10_000) -> int:
    """Drop the tag's jobs past retention, then the oldest past `keep_count`, `limit` at
    most (the script does it as it writes; this covers a quiet tag: its page read, the
    master's trim)."""
    old: list = list(client.zrangebyscore(keys.monitored(tag), "-inf",
                                          f"({now - keep_minutes * 60!r}", start=0, num=limit))
    if keep_count is not None and len(old) < limit:
        excess = client.zcard(keys.monitored(tag)) - len(old) - keep_count
        if excess > 0:
            old += list(client.zrange(keys.monitored(tag), len(old),
                                      len(old) + min(excess, limit - len(old)) - 1))
    if not old:
        return 0
    pipe = client.pipeline(transaction=False)
    pipe.zrem(keys.monitored(tag), *old)
    pipe.hdel(keys.monitored_records(tag), *old)
    pipe.zrem(keys.monitored_failed(tag), *old)
    return pipe.execute()[0]


def trim_all(client: RedisClient, keep_minutes: float, keep_count: int, now: float,
             budget: int) -> int:
    """Trim every watched tag (the master's turn), `budget` jobs at most in all."""
    gone = 0
    for tag in watched(client):
        if gone >= budget:
            break
        gone += trim(client, tag, keep_minutes, now, keep_count, limit=budget - gone)
    return gone
