"""Batches on Redis: the batch's hash and members live in its callback queue's hash tag,
and every counter change (plus the callbacks it releases) is one call of ``batch.lua``.

The index (``queues:batches`` zset, ``queues:batches:meta`` hash) is what lists, finds
and prunes batches; it is written beside the record, not atomically with it (a batch
record with no index entry is still counted and still fires its callbacks).
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from queueing.contract.roles import Reservation
from queueing.drivers.redis.keys import QueueKeys, batches_index, batches_meta
from queueing.drivers.redis.replies import as_str
from queueing.drivers.redis.scripts import run_pipelined, script_for
from queueing.entries.batch_tag import BatchTag, Settling, counted_as, settling

ScriptCall = tuple[Any, list, list]


def now_text() -> str:
    return repr(round(time.time(), 6))


def _decoded(mapping: dict) -> dict[str, str]:
    return {as_str(k): as_str(v) for k, v in mapping.items()}


class RedisBatches:
    """The batch store of one Redis connection (``driver.batches``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.client = driver.client
        self.prefix = driver.config.prefix
        self.script = script_for(self.client, "batch")

    # -- keys -----------------------------------------------------------------------------
    def _keys(self, batch_id: str, queue: str) -> list[str]:
        k: QueueKeys = self.driver.keys(queue)
        return [k.batch(batch_id), k.batch_members(batch_id), k.ready, k.notify, k.index,
                k.sequence, k.batch_failed(batch_id)]

    def _queue_of(self, batch_id: str) -> str | None:
        meta = self.client.hget(batches_meta(self.prefix), batch_id)
        return None if meta is None else as_str(meta).split("\t", 1)[0]

    def _run(self, batch_id: str, queue: str, *args: Any) -> Any:
        return self.script(keys=self._keys(batch_id, queue), args=[args[0], now_text(),
                                                                  *args[1:]])

    # -- writes ---------------------------------------------------------------------------
    def create(self, record: dict[str, Any]) -> None:
        """Store a new batch (its counters already hold every member) and index it."""
        batch_id, queue = record["id"], record["queue"]
        k = self.driver.keys(queue)
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(k.batch(batch_id), mapping={key: "" if value is None else str(value)
                                              for key, value in record.items()})
        pipe.zadd(batches_index(self.prefix), {batch_id: float(record["created_at"])})
        pipe.hset(batches_meta(self.prefix), batch_id, f"{queue}\t{record.get('name', '')}")
        pipe.execute()

    def add(self, batch_id: str, count: int) -> int:
        """Count `count` more members before they are pushed: the new total, or -1
        (unknown), -2 (cancelled), -3 (finished)."""
        queue = self._queue_of(batch_id)
        if queue is None:
            return -1
        return int(self._run(batch_id, queue, "add", count))

    def cancel(self, batch_id: str) -> int:
        queue = self._queue_of(batch_id)
        if queue is None:
            return -1
        return int(self._run(batch_id, queue, "cancel"))

    def start(self, tag: BatchTag, job_uuid: str) -> bool:
        """True: run the member; False: its batch is cancelled (it was counted so)."""
        return self.start_many([(tag, job_uuid, "")])[""]

    def start_many(self, members: list[tuple[BatchTag, str, str]]) -> dict[str, bool]:
        """Verdicts for members about to start, each (tag, job uuid, key): key -> True
        (run it) or False (its batch is cancelled: counted so, drop it). One round trip,
        one script call per batch."""
        groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        for tag, job_uuid, key in members:
            args, keys = groups.setdefault((tag.id, tag.queue), ([], []))
            args += [tag.member, job_uuid]
            keys.append(key)
        calls = [(self.script, self._keys(batch_id, queue), ["start", now_text(), *args])
                 for (batch_id, queue), (args, _keys) in groups.items()]
        if len(calls) == 1:
            call = calls[0]
            results = [call[0](keys=call[1], args=call[2])]
        else:
            results = run_pipelined(self.client, calls)
        verdicts: dict[str, bool] = {}
        for (_args, keys), result in zip(groups.values(), results):
            for key, verdict in zip(keys, result):
                verdicts[key] = bool(int(verdict))
        return verdicts

    def retrying(self, tag: BatchTag) -> bool:
        """A failed member is about to be retried: pending again (its failure uncounted)."""
        return bool(self._run(tag.id, tag.queue, "retry", tag.member))

    def settle_calls(self, held: Iterable[Reservation], outcome: str,
                     ) -> list[tuple[ScriptCall, list[Reservation]]]:
        """The script calls counting `held` (one per batch) with the reservations each
        counts; entries that are not batch members (or not a chain's last link, on
        success) add nothing. `outcome` "k" (skipped) counts as a success, whichever
        link (tag.counted_as)."""
        groups: dict[tuple[str, str], tuple[list[str], list[Reservation]]] = {}
        for reservation in held:
            found = settling(reservation.raw)
            counted = counted_as(found, outcome)
            if found is None or counted is None:
                continue
            args, group = groups.setdefault((found.tag.id, found.tag.queue), ([], []))
            args += [found.tag.member, counted, found.job_uuid]
            group.append(reservation)
        return [((self.script, self._keys(batch_id, queue), ["settle", now_text(), *args]),
                 group) for (batch_id, queue), (args, group) in groups.items()]

    def settle(self, found: Settling, outcome: str) -> int:
        return int(self._run(found.tag.id, found.tag.queue, "settle", found.tag.member,
                             outcome, found.job_uuid))

    # -- reads ----------------------------------------------------------------------------
    def get(self, batch_id: str) -> dict[str, str] | None:
        queue = self._queue_of(batch_id)
        if queue is None:
            return None
        found = self.client.hgetall(self.driver.keys(queue).batch(batch_id))
        return _decoded(found) if found else None

    def get_many(self, batch_ids: list[str]) -> list[dict[str, str]]:
        """Records of `batch_ids` (missing ones left out), in two round trips."""
        if not batch_ids:
            return []
        metas = self.client.hmget(batches_meta(self.prefix), batch_ids)
        known = [(batch_id, as_str(meta).split("\t", 1)[0])
                 for batch_id, meta in zip(batch_ids, metas) if meta is not None]
        pipe = self.client.pipeline(transaction=False)
        for batch_id, queue in known:
            pipe.hgetall(self.driver.keys(queue).batch(batch_id))
        return [_decoded(found) for found in pipe.execute() if found]

    def member_states(self, batch_id: str) -> dict[str, str]:
        queue = self._queue_of(batch_id)
        if queue is None:
            return {}
        return _decoded(self.client.hgetall(self.driver.keys(queue).batch_members(batch_id)))

    def failed_members(self, batch_id: str, limit: int) -> list[str] | None:
        """Up to `limit` failed members' job uuids, oldest failure first, from the index
        batch.lua keeps; None when the batch has no index (written before it was kept):
        the caller then reads the member states."""
        queue = self._queue_of(batch_id)
        if queue is None:
            return []
        k = self.driver.keys(queue)
        pipe = self.client.pipeline(transaction=False)
        pipe.exists(k.batch_failed(batch_id))
        pipe.zrange(k.batch_failed(batch_id), 0, limit - 1)
        indexed, found = pipe.execute()
        return [as_str(uuid) for uuid in found] if indexed else None

    def ids(self, start: int = 0, stop: int = -1) -> list[str]:
        """Batch ids, newest first."""
        return [as_str(b) for b in self.client.zrevrange(batches_index(self.prefix), start,
                                                         stop)]

    def count(self) -> int:
        return int(self.client.zcard(batches_index(self.prefix)))

    def names(self, batch_ids: list[str]) -> dict[str, str]:
        if not batch_ids:
            return {}
        metas = self.client.hmget(batches_meta(self.prefix), batch_ids)
        return {batch_id: as_str(meta).split("\t", 1)[1] if "\t" in as_str(meta) else ""
                for batch_id, meta in zip(batch_ids, metas) if meta is not None}

    def created_before(self, before: float, limit: int = 1000) -> list[str]:
        return [as_str(b) for b in self.client.zrangebyscore(
            batches_index(self.prefix), "-inf", f"({before}", start=0, num=limit)]

    def delete(self, batch_ids: list[str]) -> int:
        """Forget batches: their record, members and index entries."""
        if not batch_ids:
            return 0
        metas = self.client.hmget(batches_meta(self.prefix), batch_ids)
        calls = []
        for batch_id, meta in zip(batch_ids, metas):
            if meta is not None:
                k = self.driver.keys(as_str(meta).split("\t", 1)[0])
                # UNLINK: a large batch's members hash is freed off Redis's main thread
                calls.append(("UNLINK", k.batch(batch_id), k.batch_members(batch_id),
                              k.batch_failed(batch_id)))
        if calls:
            run_pipelined(self.client, [], before=calls)
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(batches_index(self.prefix), *batch_ids)
        pipe.hdel(batches_meta(self.prefix), *batch_ids)
        pipe.execute()
        return len(batch_ids)
