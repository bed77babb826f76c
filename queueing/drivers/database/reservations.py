"""The database driver's reservation cycle (the contract's Reservations role): pop in
one transaction with SKIP LOCKED where the vendor has it, acknowledge, release, renew,
unreserve, wait (LISTEN on PostgreSQL), completion recorders' calls, and max_exceptions
counters."""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from queueing.contract.roles import (
    Finished,
    Reservation,
    Reserved,
    finished_list,
)
from queueing.drivers.database.base import DatabaseBase, _as_bytes
from queueing.drivers.database.commit_watch import any_ready, data_version, wait_for_commit
from queueing.drivers.database.delivery import parse_token, stamp, token_of
from queueing.drivers.database.listen import Listener
from queueing.models import ControlValue


class DatabaseReservations(DatabaseBase):
    def pop(self, queue: str, *, finished: Finished = None, extra: list | None = None,
            owner: str = "") -> Reservation | None:
        """Reserve the next job of `queue` (None when it is empty or paused)."""
        got = self.pop_batch(queue, 1, finished=finished, extra=extra, owner=owner)
        return got[0] if got else None

    def pop_or_paused(self, queue: str, **kwargs: Any) -> Reservation | None:
        """The worker's pop. A paused queue answers None like an empty one (the pause is
        a condition of the pop query); the worker learns of it at its next control read."""
        return self.pop(queue, **kwargs)

    def pop_batch(self, queue: str, count: int, *,
                  finished: Finished = None, extra: list | None = None,
                  owner: str = "") -> list[Reservation]:
        """Reserve up to `count` jobs of `queue` (a worker's prefetch), in queue order,
        acknowledging `finished` (a delivery or a list of them) on the way.

        PostgreSQL does both in one statement. SQLite reserves one job per call (a local
        file gains nothing from prefetching, and its RETURNING cannot report the order).
        `extra` (completion recorders' writes, which live in Horizon's Redis) is batched.
        """
        # batch members first: a callback they release is inserted before `now`, so
        # this pop can take it
        done = [parse_token(h.token) for h in self._count_batch_members(finished)]
        self._mark_commits()  # before `now`: a job pushed after it is not picked below
        now = time.time()
        lease = self._lease(now)
        count = max(int(count), 1)
        if self.vendor == "postgresql":
            ids, attempt_counts = [d[0] for d in done], [d[1] for d in done]
            rows = self._run(self.sql.pop_batch(),
                             [ids, attempt_counts, queue, now, self.name, queue, ids, count,
                              lease, lease, owner], fetch="all")
            rows = [row[:4] for row in sorted(rows, key=lambda r: (-r[4], r[5], r[0]))]
        elif self.vendor == "sqlite":
            for row_id, delivery in done:
                self._run(self.sql.delete(), [row_id, delivery])
            row = self._run(self.sql.pop(False), [lease, lease, owner, queue, now, self.name,
                                                  queue, 0], fetch="one")
            rows = [row] if row is not None else []
        else:
            rows = self._pop_in_transaction(done, [queue, now, self.name, queue, 0], lease,
                                            owner, count)
        self._add_extra(extra, flush=not rows)
        found = []
        for row_id, attempts, delivery, payload in rows:
            token = token_of(row_id, delivery)
            found.append(Reservation(queue, stamp(payload, attempts, token, owner).encode(),
                                     token))
        return found

    def reserve(self, queue: str, count: int, *, finished: list[Reservation] | None = None,
                extra: list | None = None, owner: str = "") -> Reserved:
        """pop_batch for the worker. The acknowledgement and the pop are one statement
        (or one transaction), so either both happened or neither; recorder calls go to
        Horizon's Redis in batches and never raise (see run_extra)."""
        return Reserved(self.pop_batch(queue, count, finished=finished, extra=extra,
                                       owner=owner))

    def _pop_in_transaction(self, done: list[tuple[int, int]], pick: list, lease: float,
                            owner: str, count: int) -> list:
        """MySQL/MariaDB: lock the next rows with SKIP LOCKED, reserve them, read back."""
        wrapper = self._private()
        try:
            with wrapper.cursor() as cursor:
                cursor.execute("START TRANSACTION")
                try:
                    for row_id, delivery in done:
                        cursor.execute(self.sql.delete(), [row_id, delivery])
                    cursor.execute(self.sql.pick_for_update(count), pick)
                    ids = [found[0] for found in cursor.fetchall()]
                    rows = []
                    for row_id in ids:
                        cursor.execute(self.sql.reserve_row(), [lease, lease, owner, row_id])
                        cursor.execute(self.sql.read_row(), [row_id])
                        rows.append(cursor.fetchone())
                    cursor.execute("COMMIT")
                    return rows
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
        except self.connection_errors:
            self._drop_private()
            raise

    def acknowledge(self, finished: Finished, extra: list | None = None) -> None:
        """Delete finished deliveries (one or a list), then send `extra`."""
        done = [parse_token(h.token) for h in self._count_batch_members(finished)]
        if self.vendor == "postgresql" and done:
            self._run(self.sql.delete_many(), [[d[0] for d in done], [d[1] for d in done]])
        else:
            for row_id, delivery in done:
                self._run(self.sql.delete(), [row_id, delivery])
        self._add_extra(extra, flush=True)

    def delete(self, reservation: Reservation, *, outcome: str | None = None) -> bool:
        """Forget a reserved job; with `outcome` (f, s) a batch member is counted in its
        batch in the same transaction as its row's deletion (docs/batches.md)."""
        if outcome and not self.batches.settle_held([reservation], outcome):
            return True
        return self._run(self.sql.delete(), list(parse_token(reservation.token))) > 0

    def _count_batch_members(self, finished: Finished) -> list[Reservation]:
        """Acknowledge and count the batch members among finished jobs (one transaction
        per batch, rows deleted with the count); the others, for the usual statement."""
        held = finished_list(finished)
        if not any(b'"batch":{' in _as_bytes(h.raw) for h in held):
            return held
        return self.batches.settle_held(held, "s")

    def push_in_transaction(self, queue: str, payload: str) -> None:
        """Insert a job through Django's connection (the caller's open transaction)."""
        now = time.time()
        self._run(self.sql.insert(1), [queue, payload, 0, now, now], shared=True)

    def delete_in_transaction(self, token: tuple[int, int]) -> int:
        return self._run(self.sql.delete(), list(token), shared=True)

    def release(self, reservation: Reservation, available_at: float,
                payload: str | bytes | None = None, *, uncounted: bool = False) -> bool:
        """Back to the queue at `available_at`; nothing happens if this delivery is no
        longer the row's latest (its lease expired and another worker took it). The
        attempts column counts deliveries: an `uncounted` release lowers it again."""
        row_id, delivery = parse_token(reservation.token)
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", "surrogateescape")
        sql = self.sql.release(uncounted=uncounted)
        return self._run(sql, [available_at, payload or None, row_id, delivery]) > 0

    def renew(self, reservation: Reservation, until: float) -> bool:
        row_id, delivery = parse_token(reservation.token)
        return self._run(self.sql.renew(), [until, until, row_id, delivery]) > 0

    def renew_many(self, reservations: list[Reservation], until: float) -> list[bool]:
        """Renew every lease a worker holds in one statement (PostgreSQL); the sidecar's
        call. True for each one still held."""
        done = [parse_token(r.token) for r in reservations]
        if self.vendor != "postgresql" or not done:
            return [self.renew(r, until) for r in reservations]
        rows = self._run(self.sql.renew_many(),
                         [until, until, [d[0] for d in done], [d[1] for d in done]],
                         fetch="all")
        renewed = {tuple(row) for row in rows}
        return [d in renewed for d in done]

    def unreserve(self, held: list[Reservation]) -> int:
        """Prefetched jobs that never started go back to the head of their queue,
        uncounted (attempts as before the pop). The stored payload is kept: the column,
        not the entry, holds the count. Deliveries are not lowered, so the next delivery
        of such a row gets a token of its own."""
        back = 0
        for reservation in held:
            row_id, delivery = parse_token(reservation.token)
            back += self._run(self.sql.unreserve(), [row_id, delivery])
        return back

    def send_extra(self, calls: list) -> None:
        """Recorder writes outside the pop cycle (failures, releases): batched too."""
        self._add_extra(calls, flush=False)

    def carries_extra(self, client: Any) -> bool:
        return True  # every recorder call is batched (see _add_extra)

    # -- waiting ------------------------------------------------------------------------
    def wait_for_jobs(self, queues: Iterable[str], timeout: float) -> bool:
        """PostgreSQL: wait for a NOTIFY naming one of `queues` (True), or `timeout`.
        SQLite: wait for another connection's commit that left a job of `queues` ready
        (commit_watch.py). Elsewhere: sleep `timeout` and return False (the worker then
        polls)."""
        if self._watches_commits():
            return self._wait_for_commit(list(queues), timeout)
        if self.vendor != "postgresql" or not self.config.listen:
            time.sleep(max(timeout, 0))
            return False
        if self._listener is None or self._listener.pid != os.getpid():
            self._listener = Listener(self._shared())
            return True  # jobs pushed before LISTEN sent no wake-up: look once more
        try:
            return self._listener.wait(set(queues), timeout)
        except Exception:
            self._listener.close()
            self._listener = None
            raise

    def _watches_commits(self) -> bool:
        return self.vendor == "sqlite" and self.config.listen

    def _mark_commits(self) -> None:
        """Before the first pop since the last wait (a worker pops each of its queues in
        turn), and before the time its pick compares with: the commit count the next
        wait compares with. A job committed from here on, even one a pop already took,
        ends that wait; none is missed, whether it came after the pop's `now` (the pick
        skips it: its available_at is later) or after a lower queue's pop."""
        local = self._local
        if self._watches_commits() and (getattr(local, "seen_commits", None) is None
                                        or getattr(local, "waited", True)):
            local.seen_commits = self._on_private(data_version)
            local.waited = False

    def _wait_for_commit(self, queues: list[str], timeout: float) -> bool:
        self._local.waited = True  # the next pop marks again

        def ready() -> bool:
            return any_ready(queues, lambda queue: self._run(
                self.sql.pick_ready(), [queue, time.time(), self.name, queue, 0],
                fetch="one"))

        return wait_for_commit(lambda: self._on_private(data_version),
                               getattr(self._local, "seen_commits", None), ready, timeout)

    def _on_private(self, read: Callable[[Any], int]) -> int:
        """`read(this thread's private connection)`; a broken connection is dropped (the
        next call makes a new one), as `_run` does."""
        try:
            return read(self._private())
        except self.connection_errors:
            self._drop_private()
            raise

    def wait_then_pop(self, queue: str, timeout: float, count: int, *,
                      owner: str = "") -> None:
        return None  # see Capabilities.wait_then_pop: workers wait, then pop

    def count_exception(self, job_uuid: str) -> int:
        """One more exception of a job (for max_exceptions); returns the new count."""
        from django.db import transaction


        key = f"exceptions:{job_uuid}"[:100]
        with transaction.atomic(using=self.alias):
            row, created = (ControlValue.objects.using(self.alias).select_for_update()
                            .get_or_create(key=key, defaults={"value": "1",
                                                              "updated_at": time.time()}))
            if created:
                return 1
            count = int(row.value) + 1
            ControlValue.objects.using(self.alias).filter(key=key).update(
                value=str(count), updated_at=time.time())
            return count

    def find_member(self, queue: str, token: str) -> bytes | None:
        """The delivery named by `token` while it is still held (the sidecar's lookup)."""
        row_id, delivery = parse_token(token)
        row = self._run(self.sql.read_row(), [row_id], fetch="one")
        if row is None or row[2] != delivery:
            return None
        return stamp(row[3], row[1], token).encode()

    def forget_exceptions(self, job_uuid: str) -> None:
        ControlValue.objects.using(self.alias).filter(
            key=f"exceptions:{job_uuid}"[:100]).delete()

