"""Batches on a ``database`` connection: the batch row (``queueing_batches``) and its
settled members (``queueing_batch_members``), changed by the rules of
queueing/entries/batch_counting.py inside one transaction that holds the batch row locked
(SELECT ... FOR UPDATE; SQLite's transactions are IMMEDIATE) and that also deletes the
settled job rows and inserts the callbacks it releases: counting, acknowledging and the
callback's dispatch commit together or not at all."""
from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from queueing.contract.roles import Reservation
from queueing.drivers.database.delivery import parse_token
from queueing.entries import batch_counting as counting
from queueing.entries.batch_tag import BatchTag, counted_as, settling
from queueing.models import BatchMember, BatchRecord

FIELDS = ("id", "name", "connection", "queue", "total", "pending", "failed", "succeeded",
          "cancelled", "first_failure", "created_at", "finished_at", "cancelled_at",
          "then_at", "catch_at", "finally_at")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    return repr(value) if isinstance(value, float) else str(value)


def as_record(row: BatchRecord) -> dict[str, str]:
    """The row as the string record Batch.from_record reads (as Redis's hash)."""
    record = {name: _text(getattr(row, name)) for name in FIELDS}
    record["allow_failures"] = "1" if row.allow_failures else "0"
    for kind, spec in json.loads(row.callbacks or "{}").items():
        record[kind] = spec.get("payload", "")
    return record


def fresh_payload(payload: str, span: str, now: float) -> str:
    """A stored callback payload with its times made current (batch.lua does the same)."""
    data = json.loads(payload)
    data["pushedAt"] = data["availableAt"] = now
    if span:
        data["retryUntil"] = now + float(span)
    return json.dumps(data, separators=(",", ":"))


class DatabaseBatches:
    """The batch store of one database connection (``driver.batches``)."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.alias = driver.alias

    def _locked(self, batch_id: str) -> BatchRecord | None:
        return BatchRecord.objects.using(self.alias).select_for_update().filter(
            id=batch_id).first()

    def _states(self, row: BatchRecord, members: Iterable[str]) -> dict[str, str | None]:
        found = dict(BatchMember.objects.using(self.alias).filter(
            batch_id=row.id, member__in=list(members)).values_list("member", "state"))
        return dict(found)

    def _save(self, row: BatchRecord, before: dict[str, str | None],
              after: dict[str, str | None], fire: list[str], now: float) -> None:
        row.save(using=self.alias)
        for member, state in after.items():
            if state == before.get(member) or state is None:
                continue
            updated = BatchMember.objects.using(self.alias).filter(
                batch_id=row.id, member=member).update(state=state)
            if not updated:
                BatchMember.objects.using(self.alias).create(batch_id=row.id, member=member,
                                                             state=state)
        callbacks = json.loads(row.callbacks or "{}")
        for kind in fire:
            spec = callbacks.get(kind)
            if spec:
                self.driver.push_in_transaction(row.queue, fresh_payload(
                    spec["payload"], spec.get("span", ""), now))

    # -- writes ---------------------------------------------------------------------------
    def create(self, record: dict[str, Any]) -> None:
        callbacks = {kind: {"payload": record[kind], "span": record.get(f"{kind}_span", "")}
                     for kind in ("then", "catch", "finally") if record.get(kind)}
        BatchRecord.objects.using(self.alias).create(
            id=record["id"], name=record.get("name", ""), connection=record["connection"],
            queue=record["queue"], total=int(record["total"]),
            pending=int(record["pending"]), created_at=float(record["created_at"]),
            allow_failures=str(record.get("allow_failures")) == "1",
            callbacks=json.dumps(callbacks))

    def add(self, batch_id: str, count: int) -> int:
        with transaction.atomic(using=self.alias):
            row = self._locked(batch_id)
            if row is None:
                return -1
            if row.cancelled_at is not None:
                return -2
            if row.pending <= 0:
                return -3
            row.pending += count
            row.total += count
            row.save(using=self.alias, update_fields=["pending", "total"])
            return row.total

    def cancel(self, batch_id: str) -> int:
        with transaction.atomic(using=self.alias):
            row = self._locked(batch_id)
            if row is None:
                return -1
            if row.cancelled_at is not None:
                return 0
            row.cancelled_at = time.time()
            row.save(using=self.alias, update_fields=["cancelled_at"])
            return 1

    def start(self, tag: BatchTag, job_uuid: str) -> bool:
        return self.start_many([(tag, job_uuid, "")])[""]

    def start_many(self, members: list[tuple[BatchTag, str, str]]) -> dict[str, bool]:
        verdicts: dict[str, bool] = {}
        by_batch: dict[str, list[tuple[BatchTag, str, str]]] = {}
        for item in members:
            by_batch.setdefault(item[0].id, []).append(item)
        now = time.time()
        for batch_id, items in by_batch.items():
            with transaction.atomic(using=self.alias):
                row = self._locked(batch_id)
                if row is None or row.cancelled_at is None:
                    verdicts.update((key, True) for _tag, _uuid, key in items)
                    continue
                before = self._states(row, [tag.member for tag, _u, _k in items])
                after, fire = dict(before), list[str]()
                for tag, job_uuid, key in items:
                    verdicts[key] = counting.start(row, after, tag.member, job_uuid, now, fire)
                self._save(row, before, after, fire, now)
        return verdicts

    def retrying(self, tag: BatchTag) -> bool:
        with transaction.atomic(using=self.alias):
            row = self._locked(tag.id)
            if row is None:
                return False
            before = self._states(row, [tag.member])
            after = dict(before)
            if not counting.retry(row, after, tag.member):
                return False
            self._save(row, before, after, [], time.time())
            return True

    def settle_held(self, held: list[Reservation], outcome: str) -> list[Reservation]:
        """Delete the job rows of `held` and count the batch members among them, one
        transaction per batch; answers the reservations it did not handle (not members,
        or a chain's link that is not the last, on success): the caller deletes those."""
        rest: list[Reservation] = []
        groups: dict[str, list[tuple[Reservation, Any, str]]] = {}
        for reservation in held:
            found = settling(reservation.raw)
            counted = counted_as(found, outcome)
            if found is None or counted is None:
                rest.append(reservation)
            else:
                groups.setdefault(found.tag.id, []).append((reservation, found, counted))
        now = time.time()
        for batch_id, items in groups.items():
            with transaction.atomic(using=self.alias):
                for reservation, _found, _counted in items:
                    self.driver.delete_in_transaction(parse_token(reservation.token))
                row = self._locked(batch_id)
                if row is None:
                    continue
                before = self._states(row, [found.tag.member for _r, found, _c in items])
                after, fire = dict(before), list[str]()
                changed = False
                for _reservation, found, counted in items:
                    changed |= counting.settle(row, after, found.tag.member, counted,
                                               found.job_uuid, now, fire)
                if changed:
                    counting.finish(row, now, fire)
                    self._save(row, before, after, fire, now)
        return rest

    def settle(self, found: Any, outcome: str) -> int:
        """Count one member whose job row is already gone (deleted by an operator)."""
        now = time.time()
        with transaction.atomic(using=self.alias):
            row = self._locked(found.tag.id)
            if row is None:
                return 0
            before = self._states(row, [found.tag.member])
            after, fire = dict(before), list[str]()
            if not counting.settle(row, after, found.tag.member, outcome, found.job_uuid,
                                   now, fire):
                return 0
            counting.finish(row, now, fire)
            self._save(row, before, after, fire, now)
            return 1

    # -- reads ----------------------------------------------------------------------------
    def get(self, batch_id: str) -> dict[str, str] | None:
        row = BatchRecord.objects.using(self.alias).filter(id=batch_id).first()
        return None if row is None else as_record(row)

    def get_many(self, batch_ids: list[str]) -> list[dict[str, str]]:
        rows = BatchRecord.objects.using(self.alias).filter(id__in=batch_ids)
        return [as_record(row) for row in rows]

    def member_states(self, batch_id: str) -> dict[str, str]:
        return dict(BatchMember.objects.using(self.alias).filter(
            batch_id=batch_id).values_list("member", "state"))

    def failed_members(self, batch_id: str, limit: int) -> list[str] | None:
        """Up to `limit` failed members' job uuids: one bounded query on the batch's
        member rows, never every member's state."""
        states = (BatchMember.objects.using(self.alias)
                  .filter(batch_id=batch_id, state__startswith="f:")
                  .order_by("id").values_list("state", flat=True)[:limit])
        return [state[2:] for state in states]

    def _own(self) -> Any:
        return BatchRecord.objects.using(self.alias).filter(connection=self.driver.name)

    def ids(self, start: int = 0, stop: int = -1) -> list[str]:
        rows = self._own().order_by("-created_at").values_list("id", flat=True)
        return list(rows[start:] if stop < 0 else rows[start:stop + 1])

    def count(self) -> int:
        return self._own().count()

    def names(self, batch_ids: list[str]) -> dict[str, str]:
        return dict(self._own().filter(id__in=batch_ids).values_list("id", "name"))

    def created_before(self, before: float, limit: int = 1000) -> list[str]:
        return list(self._own().filter(created_at__lt=before).order_by(
            "created_at").values_list("id", flat=True)[:limit])

    def delete(self, batch_ids: list[str]) -> int:
        if not batch_ids:
            return 0
        with transaction.atomic(using=self.alias):
            BatchMember.objects.using(self.alias).filter(batch_id__in=batch_ids).delete()
            BatchRecord.objects.using(self.alias).filter(id__in=batch_ids).delete()
        return len(batch_ids)

