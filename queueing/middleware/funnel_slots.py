"""The Redis side of ConcurrencyLimited: slots with leases, the line of parked jobs, and
waking the next one when a slot frees.

A key's state is two keys in one hash tag (one cluster slot): the holders, a sorted set
owner -> lease expiry, and the waiting line, a sorted set waiter -> when it first
parked. A job that finds the N slots held is *parked*: handed back to its queue's
delayed set for a long while (``park_for``) and put in line. Whoever gives a slot back
takes the oldest waiter out of line and makes its delayed entry ready at once, so a
parked job starts as soon as a slot frees and nothing polls. ``park_for`` is only the
safety net for a wake that was lost (the waker died between the two steps).

While a job runs, its slot's lease is renewed by one daemon thread per process (every
third of the lease); a worker that dies stops renewing, so its slots lapse within the
lease (and the sidecar, when it outlives the worker, gives them back at once). A lapsed
slot is not given away on the lapse alone: a job stuck in C code holding the GIL stops
that thread too, and still runs. Each holder's job is recorded (``:where``), and a
taker that needs a lapsed slot first asks the store whether that job is still reserved
with a live lease, which the worker's sidecar keeps renewed from its own process
(``take``); only a holder whose job is gone loses its slot.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from queueing import connections
from queueing.middleware.keys import control_key
from queueing.middleware.store import script

logger = logging.getLogger("queueing.worker")

KEEP_MS = 24 * 3600 * 1000  # a funnel's keys outlive their last use by a day at most
WAKE_ROUNDS = 5  # times a release looks further down the line past gone waiters


def holders_key(key: str) -> str:
    """``queueing:funnel:{KEY}``: the slots held, owner -> lease expiry (ms)."""
    return control_key("funnel", key)


def waiting_key(key: str) -> str:
    """``queueing:funnel:{KEY}:waiting``: parked jobs, in the order they first parked."""
    return f"{holders_key(key)}:waiting"


def waiter_of(connection: str, queue: str, uuid: str) -> str:
    return json.dumps([connection, queue, uuid], separators=(",", ":"))


def where_key(key: str) -> str:
    """``queueing:funnel:{KEY}:where``: holder -> ``[connection, queue, reservation]`` of
    its job (where_of), so a
    holder whose slot lease lapsed can be checked before its slot is given away."""
    return f"{holders_key(key)}:where"


def where_of(connection: str, queue: str, reservation: str) -> str:
    """A holder's job: its connection, queue and reservation token (the delivery: a
    later delivery of the same job, run again after its worker died, is another)."""
    return json.dumps([connection, queue, reservation], separators=(",", ":"))


def take(client: Any, key: str, owner: str, limit: int, lease_ms: int, waiter: str,
         where: str = "") -> tuple[bool, int, float]:
    """(taken, slots held now, seconds until the first held lease lapses unless renewed):
    a slot for `owner` (its job at `where`: where_of), or `waiter` put in line.

    A holder whose slot lease lapsed is not taken for dead: its job may still run with
    its worker unable to renew (a C call holding the GIL stops every thread). Its
    reservation's lease, which the worker's sidecar (a process of its own) renews,
    says whether it runs: a holder whose job is still reserved and leased keeps its
    slot (renewed here on its behalf); any other lapsed holder is evicted."""
    keys = [holders_key(key), waiting_key(key), where_key(key)]
    run = script(client, "funnel_take")
    reply = run(keys=keys, args=[owner, limit, lease_ms, waiter, KEEP_MS, "0", where])
    if int(reply[0]) == 2:  # a lapsed holder stands between this job and a slot
        for holder, found in zip(reply[2::2], reply[3::2]):
            leased_for = _leased_for(holder, found)
            if leased_for > 0:  # it runs: its slot is held as long as its reservation
                script(client, "funnel_renew")(keys=[holders_key(key)],
                                               args=[leased_for, KEEP_MS, holder])
        reply = run(keys=keys, args=[owner, limit, lease_ms, waiter, KEEP_MS, "1", where])
    lapses_in = int(reply[2]) / 1000.0 if int(reply[0]) == 0 and len(reply) > 2 else 0.0
    return int(reply[0]) == 1, int(reply[1]), lapses_in


def _leased_for(holder: bytes | str, found: bytes | str) -> int:
    """Milliseconds a lapsed holder's job is still reserved for (its sidecar renews that
    lease, GIL or not); 0 when it is not. Anything unclear (no record of where its job
    is, a store that cannot say) counts as gone, as a lapsed lease always did."""
    owner = holder.decode() if isinstance(holder, bytes) else holder
    text = found.decode() if isinstance(found, bytes) else found
    try:
        connection, queue, token = json.loads(text)
        driver: Any = connections.driver(connection)
        located = driver.locate(queue, owner.split(" ", 1)[0])
    except Exception:
        return 0
    if located is None or located[0] != "reserved" or not token:
        return 0
    entry = located[1].decode("utf-8", "replace") if isinstance(located[1], bytes) \
        else str(located[1])
    if f'"reservation":"{token}"' not in entry:
        return 0  # reserved again, by another delivery: this holder's run is gone
    return max(int((float(located[2]) - time.time()) * 1000), 0)


def give_back(client: Any, key: str, owner: str, limit: int) -> bool:
    """Give `owner`'s slot back ('' for none) and wake one parked job per free slot;
    True if `owner` held a slot. Never raises past a log line: at worst a parked job
    waits out its ``park_for`` and a lapsed slot its lease."""
    released = False
    for _ in range(WAKE_ROUNDS):
        reply = script(client, "funnel_release")(
            keys=[holders_key(key), waiting_key(key), where_key(key)], args=[owner, limit])
        released = released or bool(reply[0])
        owner = ""
        pairs = list(zip(reply[1::2], reply[2::2]))
        if not pairs:
            return released
        woken = [_wake(client, key, waiter, score) for waiter, score in pairs]  # each one
        if any(woken):
            return released
    return released


def _wake(client: Any, key: str, waiter: bytes | str, score: Any) -> bool:
    """Make one parked job ready now. True if woken; a job still being parked (or
    running) goes back in line in its place; a gone or already ready one is dropped."""
    text = waiter.decode() if isinstance(waiter, bytes) else waiter
    try:
        connection, queue, uuid = json.loads(text)
        driver: Any = connections.driver(connection)
        found = _find(driver, queue, uuid)
        if found is None:
            return False
        state, entry = found
        if state == "delayed":
            return bool(driver.promote_delayed(queue, entry))
        if state == "reserved":  # parking meanwhile: its own recheck after parking wakes it
            client.zadd(waiting_key(key), {text: float(score)}, nx=True)
        return False
    except Exception as exc:
        logger.warning("could not wake parked job %s of funnel %s: %s", text, key, exc)
        return False


def _find(driver: Any, queue: str, uuid: str) -> tuple[str, Any] | None:
    """(state, entry) of job `uuid` in `queue`, by the store's uuid index."""
    found = driver.locate(queue, uuid)
    if found is not None:
        return found[0], found[1]
    if getattr(driver.capabilities, "find_by_uuid", False):
        for state in ("delayed", "reserved", "pending"):
            rows = driver.find(state, queue, uuid)
            if rows:
                return state, rows[0] if state == "pending" else rows[0][0]
    return None


class SlotLeases:
    """The slots this process's running jobs hold, renewed by one daemon thread."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], tuple[Any, int]] = {}  # (key, owner) -> (client, ms)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, client: Any, key: str, owner: str, lease_ms: int) -> None:
        with self._lock:
            sooner = all(lease_ms < ms for _, ms in self._held.values())
            self._held[(key, owner)] = (client, lease_ms)
            if self._thread is None or not self._thread.is_alive():  # none yet, or forked
                self._thread = threading.Thread(target=self._run, name="funnel-leases",
                                                daemon=True)
                self._thread.start()
            elif sooner:  # a shorter lease than any held: the thread's wait is too long
                self._wake.set()

    def drop(self, key: str, owner: str) -> None:
        with self._lock:
            self._held.pop((key, owner), None)

    def held(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._held)

    def renew_now(self) -> None:
        """One round: every held slot's lease extended (one call per key)."""
        with self._lock:
            by_key: dict[str, tuple[Any, int, list[str]]] = {}
            for (key, owner), (client, ms) in self._held.items():
                found = by_key.setdefault(key, (client, ms, []))
                found[2].append(owner)
        for key, (client, ms, owners) in by_key.items():
            try:
                script(client, "funnel_renew")(keys=[holders_key(key)],
                                               args=[ms, KEEP_MS, *owners])
            except Exception as exc:  # tried again next round, well before it lapses
                logger.warning("could not renew the funnel slots of %s: %s", key, exc)

    def _interval(self) -> float:
        with self._lock:
            shortest = min((ms for _, ms in self._held.values()), default=30_000)
        return max(shortest / 3000.0, 0.05)

    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval())
            self._wake.clear()
            self.renew_now()


leases = SlotLeases()
