"""The database driver's control and inspector roles: pause, restart and cancel
requests, the store's health, pruning of per-job control rows, and the operator's reads
and actions (sizes, listings, lookups by uuid, delete, promote)."""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from queueing.contract.roles import (
    PREFIX_READ,
    ControlState,
    QueueSizes,
)
from queueing.drivers.cancel_requests import cancel_request
from queueing.drivers.database.base import (
    RESTART_KEY,
    SAFE_BATCH_ID,
    SAFE_UUID,
    WHOLE,
    DatabaseBase,
    ListedCut,
    ListedJob,
)
from queueing.drivers.database.delivery import stamp, token_of
from queueing.entries.payload import peek
from queueing.models import ControlValue, PausedQueue


class DatabaseOperator(DatabaseBase):
    # -- pause --------------------------------------------------------------------------
    def pause(self, queue: str) -> None:
        """Checked inside the pop statement: once this commits, no pop that starts
        afterwards reserves from `queue`."""
        PausedQueue.objects.using(self.alias).get_or_create(connection=self.name, queue=queue)

    def resume(self, queue: str) -> None:
        PausedQueue.objects.using(self.alias).filter(connection=self.name, queue=queue).delete()

    def is_paused(self, queue: str) -> bool:
        return queue in self.paused_queues()

    def paused_queues(self) -> set[str]:
        """Read by workers every control interval, on their own session (Django closes
        the shared one after every job)."""
        rows = self._run(self.sql.paused_queues(), [self.name], fetch="all")
        return {queue for (queue,) in rows}

    # -- queue_restart ------------------------------------------------------------------
    def broadcast_restart(self, stamp_: float) -> None:
        ControlValue.objects.using(self.alias).update_or_create(
            key=RESTART_KEY, defaults={"value": repr(stamp_)})

    def last_restart(self) -> float | None:
        row = self._run(self.sql.control_value(), [RESTART_KEY], fetch="one")
        return float(row[0]) if row is not None else None

    def request_cancel(self, uuid: str, by: str, reason: str = "") -> None:
        ControlValue.objects.using(self.alias).update_or_create(
            key=f"cancel:{uuid}"[:100],
            defaults={"value": json.dumps({"by": by, "reason": reason, "at": time.time()}),
                      "updated_at": time.time()})

    def cancel_requests(self, uuids: list[str]) -> dict[str, dict]:
        if not uuids:
            return {}
        keys = {f"cancel:{uuid}"[:100]: uuid for uuid in uuids}
        found, stale = {}, []
        for row in ControlValue.objects.using(self.alias).filter(key__in=list(keys)):
            request = cancel_request(row.value)
            if request is None:
                stale.append(row.key)
            else:
                found[keys[row.key]] = request
        if stale:
            ControlValue.objects.using(self.alias).filter(key__in=stale).delete()
        return found

    def forget_cancel(self, uuid: str) -> None:
        ControlValue.objects.using(self.alias).filter(key=f"cancel:{uuid}"[:100]).delete()

    def reserved_job(self, queue: str, uuid: str) -> bytes | None:
        found = self.find("reserved", queue, uuid)
        return bytes(found[0][0]) if found else None

    def read_control(self) -> ControlState:
        """Both from the connection's own tables, on the worker's private session."""
        return ControlState(self.last_restart(), frozenset(self.paused_queues()))

    def restart_scope(self) -> str:
        """Connections on the same database alias share one broadcast."""
        return f"database:{self.alias}"

    def ping(self) -> None:
        """Nothing to do: the database is reached at the first pop (Django connects
        lazily), and a failure there is retried like any lost connection."""

    def heartbeat_store(self) -> None:
        return None  # the dashboard shows each row's holder and lease instead

    def control_store(self) -> None:
        return None  # job controls keep their state on a Redis connection

    def eviction_policy(self) -> str | None:
        return None  # a database never drops rows to free memory

    def oldest_pending(self, queues: list[str]) -> list[bytes | None]:
        """The first row of each queue in the order workers take them."""
        return [next(iter(self.pending(name, 0, 0)), None) for name in queues]

    def prune_control(self, before: float, limit: int = 5000, chunk: int = 500) -> int:
        """Delete per-job control rows (exception counters, cancel requests) last
        written before `before`, `chunk` per transaction, `limit` at most: the Redis
        driver's keys expire (EXCEPTIONS_TTL); these rows are trimmed by the Horizon
        master (HORIZON['trim']['database_control']). Rows written before 0007 are
        stamped now, so they go one retention later. How many went."""
        rows = ControlValue.objects.using(self.alias)
        per_job = Q()
        for prefix in self.PER_JOB_CONTROL:
            per_job |= Q(key__startswith=prefix)
        rows.filter(per_job, updated_at__isnull=True).update(updated_at=time.time())
        deleted = 0
        while deleted < limit:
            keys = list(rows.filter(per_job, updated_at__lt=before)
                        .values_list("key", flat=True)[:min(chunk, limit - deleted)])
            if not keys:
                break
            gone, _ = rows.filter(key__in=keys).delete()
            deleted += gone
        return deleted

    # -- reads and operator actions -----------------------------------------------------
    def sizes(self, queue: str) -> QueueSizes:
        return self.sizes_many([queue])[queue]

    def sizes_many(self, queues: Iterable[str]) -> dict[str, QueueSizes]:
        queues = list(dict.fromkeys(queues))
        found = {q: QueueSizes() for q in queues}
        if not queues:
            return found
        now = time.time()
        rows = self._run(self.sql.sizes(len(queues)), [now, now, now, *queues],
                         fetch="all", shared=True)
        for queue, pending, delayed, reserved in rows:
            found[queue] = QueueSizes(int(pending or 0), int(delayed or 0), int(reserved or 0))
        return found

    def _listed(self, state: str, queue: str, start: int, stop: int,
                preview: int | None = None) -> list:
        limit = max(stop - start + 1, 0) if stop >= 0 else 10 ** 9
        cut = preview or WHOLE
        rows = self._run(self.sql.listing(state), [cut, queue, time.time(), limit,
                                                   max(start, 0)], fetch="all", shared=True)
        return [self._entry(state, row[:6], size=row[6]) for row in rows]

    def _entry(self, state: str, row: Any, size: int | None = None) -> Any:
        row_id, attempts, payload, available_at, owner, delivery = row
        if state == "reserved":
            raw = stamp(payload, attempts, token_of(row_id, delivery), owner)
        else:
            raw = stamp(payload, attempts)
        entry: bytes = ListedJob(raw, row_id)
        if size is not None and size > len(payload):  # a listing's cut payload
            cut = ListedCut(entry, len(entry) + size - len(payload))
            cut.row_id = row_id
            entry = cut
        return entry if state == "pending" else (entry, available_at)

    def pending(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[bytes]:
        """Ready jobs in the order workers take them (expired reservations included)."""
        return self._listed("pending", queue, start, stop, preview)

    def delayed(self, queue: str, start: int = 0, stop: int = 49, *,
                preview: int | None = None) -> list[tuple[bytes, float]]:
        return self._listed("delayed", queue, start, stop, preview)

    def reserved(self, queue: str, start: int = 0, stop: int = 49, *,
                 preview: int | None = None) -> list[tuple[bytes, float]]:
        """Reserved jobs, soonest lease expiry first, with that expiry."""
        return self._listed("reserved", queue, start, stop, preview)

    def find(self, state: str, queue: str, uuid: str) -> list:
        """Entries of `state` whose payload carries `uuid` (the dashboard's lookup)."""
        if not SAFE_UUID.match(uuid):
            return []  # LIKE wildcards or quotes: no payload written by dispatch has those
        pattern = f'%"uuid":"{uuid}"%'
        rows = self._run(self.sql.find(state), [queue, time.time(), pattern], fetch="all",
                         shared=True)
        return [self._entry(state, row) for row in rows]

    def clear(self, queue: str) -> int:
        return self._run(self.sql.clear(), [queue, time.time()], shared=True)

    def _row_id(self, state: str, queue: str, raw_or_id: Any) -> int | None:
        if isinstance(raw_or_id, int):
            return raw_or_id
        row_id = getattr(raw_or_id, "row_id", None)
        if row_id is not None:
            return row_id

        uuid = peek(raw_or_id).get("uuid")
        found = self.find(state, queue, uuid) if isinstance(uuid, str) else []
        return found[0].row_id if found and state == "pending" else (
            found[0][0].row_id if found else None)

    def forget_pending(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("pending", queue, raw_or_id)
        return row_id is not None and self._run(
            self.sql.delete_in_state("pending"), [queue, time.time(), row_id], shared=True) > 0

    def forget_delayed(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("delayed", queue, raw_or_id)
        return row_id is not None and self._run(
            self.sql.delete_in_state("delayed"), [queue, time.time(), row_id], shared=True) > 0

    def run_now(self, queue: str, raw_or_id: Any) -> bool:
        return self.promote_delayed(queue, raw_or_id)  # the table keeps no order to jump

    def batch_members_held(self, batch_id: str, *, except_owner: str) -> int:
        """One count over the reserved rows (LIKE on the member tag; a batch id is
        letters, digits, '-' and '_', and '_' matching any one character can only
        count a row too many, which keeps a batch one round longer)."""
        if not SAFE_BATCH_ID.match(batch_id):
            return 0
        pattern = f'%"batch":{{"id":"{batch_id}"%'
        return int(self._run(self.sql.count_reserved_like(), [time.time(), pattern,
                                                               except_owner],
                             fetch="one", shared=True)[0])

    def locate(self, queue: str, uuid: str) -> tuple[str, bytes, float] | None:
        return None  # find() looks a uuid up in one query (Capabilities.find_by_uuid)

    def noted_late(self, queue: str, uuid: str) -> bool:
        return False  # a write is one transaction: never landed after it was given up on

    def entries_scored(self, state: str, queue: str, score: float
                       ) -> list[tuple[bytes, float]]:
        return []  # as locate

    def uuids_with_prefix(self, queue: str, prefix: str, limit: int,
                          read: int = PREFIX_READ) -> list[str]:
        return []  # no uuid index: the failed and completed records still count

    def location(self) -> str:
        return f"the database {self.alias!r} of connection {self.name!r}"

    def promote_delayed(self, queue: str, raw_or_id: Any) -> bool:
        row_id = self._row_id("delayed", queue, raw_or_id)
        now = time.time()
        return row_id is not None and self._run(
            self.sql.promote(), [now, queue, now, row_id], shared=True) > 0
