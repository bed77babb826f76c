"""Fair queues: a queue that rotates between keys (tenants), so one tenant's 100,000 jobs
do not hold back another's 10 (docs/fair-queues.md).

A connection names its fair queues (``QUEUE["connections"][..]["fair_queues"] =
["reports"]``). A job is sent to one key of a fair queue with
``job.using(queue=fair_queue("reports", tenant_id))``: each key is an ordinary queue of
its own, ``reports.fair.<key>`` (FIFO, delayed, reserved, the dashboard's pages and
every script as for any queue), listed in the fair queue's rotation, a sorted set
``queues:{reports}:fair`` (key queue -> last dispatch). A worker given ``--queue=reports``
takes each round's jobs from the next key queue with work, in turn (FairRotation), so
keys are served round-robin. Ordinary queues pay nothing: a worker without a fair queue
never builds a rotation.
"""
from __future__ import annotations

import bisect
import hashlib
import re
import time
from typing import Any

from queueing import connections
from queueing.errors import InvalidOption
from queueing.settings.config import queue_settings
from queueing.settings.connection import FAIR_MARK, fair_parent
from queueing.settings.namespace import namespaced

KEY_MAX = 40  # characters of a key kept in its queue's name (longer ones get a digest)
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
REFRESH_EVERY = 0.5  # seconds a worker's list of key queues is trusted
FORGET_AFTER = 60.0  # seconds since its last dispatch before an empty key queue leaves
FORGET_CHECK_EVERY = 10.0  # seconds between a worker's checks of one empty key queue


def rotation_key(prefix: str, queue: str) -> str:
    """``queues:{QUEUE}:fair``: the fair queue's key queues, in its hash tag (and the
    app's namespace, as every queue key)."""
    return namespaced(f"{prefix}{{{queue}}}:fair")


def key_queue(queue: str, key: Any) -> str:
    """``reports.fair.<key>``: the queue of one key (cleaned to a queue name's letters;
    a key that had to change, or a long one, gets a digest so no two keys share one)."""
    text = str(key)
    clean = _UNSAFE.sub("-", text)[:KEY_MAX]
    if clean != text or not clean:
        clean = f"{clean[:KEY_MAX - 9]}~{hashlib.sha1(text.encode()).hexdigest()[:8]}"
        clean = clean.replace("~", "-")
    return f"{queue}{FAIR_MARK}{clean}"


def fair_queue(queue: str, key: Any, *, connection: str | None = None) -> str:
    """The queue to send a job of `key` to on fair queue `queue` (listed in its
    rotation now, before the job is pushed, so a worker finds it)."""
    config = queue_settings().connection(connection)
    if queue not in config.fair_queues:
        raise InvalidOption(f"{queue!r} is not a fair queue of connection {config.name!r}: "
                            f"list it in QUEUE['connections'][{config.name!r}]['fair_queues']")
    if key is None or key == "":
        raise InvalidOption(f"fair_queue({queue!r}, ...) needs a key (a tenant id), got "
                            f"{key!r}")
    name = config.check_queue(key_queue(queue, key))
    client = connections.driver(config.name).control_store()
    if client is None:
        raise InvalidOption(f"fair queues keep their rotation in Redis; {config.name!r} is "
                            f"a {config.driver!r} connection")
    client.zadd(rotation_key(config.prefix, queue), {name: time.time()})
    return name


class FairRotation:
    """A worker's turn-taking between the key queues of its fair queues."""

    def __init__(self, driver: Any, fair: list[str]) -> None:
        self.driver = driver
        self.client = driver.control_store()
        self.prefix = driver.config.prefix
        self.fair = fair
        self.members: dict[str, list[str]] = {queue: [] for queue in fair}
        # the key queue served last, by name: the turn is the next name after it, so keys
        # joining or leaving the rotation never shift it (a position in the sorted list
        # did: each key that joined before it handed the turn back to the same key)
        self.last: dict[str, str | None] = dict.fromkeys(fair)
        self.read_at = float("-inf")
        self.checked: dict[str, float] = {}

    @classmethod
    def for_worker(cls, driver: Any, queues: tuple[str, ...]) -> FairRotation | None:
        """None (nothing to do, no cost) unless the worker serves a fair queue."""
        fair = [q for q in queues if q in getattr(driver.config, "fair_queues", ())]
        if not fair or driver.control_store() is None:
            return None
        return cls(driver, fair)

    def expand(self, queues: tuple[str, ...], paused: set[str]) -> list[str]:
        """The queues to try this round, in order: each fair queue replaced by its key
        queues starting at the one whose turn it is (then the fair queue itself, for
        jobs sent to it directly)."""
        now = time.monotonic()
        if now - self.read_at >= REFRESH_EVERY:
            self.read_at = now
            for queue in self.fair:
                found = self.client.zrange(rotation_key(self.prefix, queue), 0, -1)
                self.members[queue] = sorted(
                    m.decode() if isinstance(m, bytes) else m for m in found)
        order: list[str] = []
        for queue in queues:
            subs = self.members.get(queue)
            if subs and queue not in paused:
                last = self.last[queue]
                start = 0 if last is None else bisect.bisect_right(subs, last) % len(subs)
                order.extend(q for q in subs[start:] + subs[:start] if q not in paused)
            order.append(queue)
        return order

    def took(self, queue: str) -> None:
        """`queue` gave jobs this round: the turn passes to the key queue after it (by
        name, whatever joins or leaves meanwhile)."""
        parent = fair_parent(queue)
        if parent is not None and parent in self.last:
            self.last[parent] = queue

    def found_empty(self, queue: str) -> None:
        """A key queue gave nothing: once nothing was sent to it for FORGET_AFTER and it
        holds no job, it leaves the rotation (and comes back with its next dispatch:
        fair_queue lists it before the push, and a queue found busy again is put back)."""
        parent = fair_parent(queue)
        if parent not in self.members:
            return
        now = time.monotonic()
        if now - self.checked.get(queue, float("-inf")) < FORGET_CHECK_EVERY:
            return
        self.checked[queue] = now
        key = rotation_key(self.prefix, parent)
        last = self.client.zscore(key, queue)
        if last is None or time.time() - float(last) < FORGET_AFTER:
            return
        if self.driver.sizes(queue).total:
            return
        self.client.zrem(key, queue)
        if self.driver.sizes(queue).total:  # sent to meanwhile: back in turn
            self.client.zadd(key, {queue: float(last)}, nx=True)
