"""The worker's sidecar: a small process that watches the running job from outside.

Why a separate process: a job stuck in C code that holds the GIL stops every thread
of its interpreter, the SIGALRM handler included, so nothing inside the worker can
stop it or keep its lease alive. The sidecar is forked by the worker at start-up (so
it costs no interpreter start and shares memory copy-on-write) and reads a slot of
shared memory the worker writes at the start and end of every job: no syscall and no
Redis call on the hot path, only a few stores and one memcpy of the reserved entry.

Every tick (0.1 s) the sidecar:
- renews the running job's lease every ``retry_after / 3`` (the renew script; a no-op
  once the reservation is gone), so a job never runs twice while its worker lives,
  however long it runs;
- SIGKILLs the worker when the job is still running ``kill_grace`` seconds after its
  timeout, then records the outcome the worker could not: the job is released with
  backoff, or failed when out of tries or ``fail_on_timeout`` is set (the same rules as
  the in-process alarm), and the sidecar exits;
- exits as soon as the worker is gone or says it is stopping.

RQ and Celery stop a hung job from a parent process that forks one child per job (RQ)
or per pool slot (Celery); forking per job costs milliseconds a job, this costs nothing
per job. See docs/reservation-contract.md.
"""
from __future__ import annotations

import logging
import mmap
import os
import signal
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from queueing.drivers.contract import QueueDriver, Reservation

logger = logging.getLogger("queueing.worker")

TICK = 0.1  # seconds between the sidecar's looks at the slot
# Header: seq (Q), state (q: 0 idle, 1 running, 2 stopping), started (d), kill_at (d,
# 0 = none), held_at (d), held blob length (Q), running token length (Q); then the
# running token (TOKEN_ROOM bytes), then the held blob: for every reservation the worker
# holds (running, prefetched, finished but not yet acknowledged), "=HHQ" lengths of its
# queue, token and member, then those bytes.
_HEADER = struct.Struct("=QqdddQQ")
_ENTRY = struct.Struct("=HHQ")
TOKEN_ROOM = 256
SLOT_SIZE = 64 * 1024 * 1024  # address space only: pages are used as entries need them
BLOB_START = _HEADER.size + TOKEN_ROOM
BLOB_ROOM = SLOT_SIZE - BLOB_START
IDLE, RUNNING, STOPPING = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Held:
    queue: str
    token: str
    member: bytes | None  # None when it did not fit in the slot (found by token instead)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the sidecar reads: the state, the running job, and when the held set was
    last written."""

    seq: int
    state: int
    started: float
    kill_at: float
    held_at: float
    token: str


class JobSlot:
    """Shared memory between the worker (writer) and its sidecar (reader).

    A seqlock: the writer makes ``seq`` odd while it writes and even when done; a
    reader that sees an odd or changed ``seq`` reads again.
    """

    def __init__(self) -> None:
        self.buffer = mmap.mmap(-1, SLOT_SIZE, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        self.seq = 0
        self.state = IDLE
        self.started = self.kill_at = self.held_at = 0.0
        self.blob_len = 0
        self.token = b""
        self._publish()

    def _begin(self) -> None:
        self.seq += 1  # odd: writing
        struct.pack_into("=Q", self.buffer, 0, self.seq)

    def _publish(self) -> None:
        if self.seq % 2 == 0:
            self._begin()
        # The fields first, under the odd sequence number; the even number last, alone,
        # so a reader never pairs a finished number with half-written fields.
        _HEADER.pack_into(self.buffer, 0, self.seq, self.state, self.started, self.kill_at,
                          self.held_at, self.blob_len, len(self.token))
        self.seq += 1
        struct.pack_into("=Q", self.buffer, 0, self.seq)

    def hold(self, reservations) -> None:
        """Record every reservation the worker now holds (after each pop)."""
        self._begin()
        offset = BLOB_START
        for held in reservations:
            queue, token = held.queue.encode(), held.token.encode()
            member = held.raw
            if offset + _ENTRY.size + len(queue) + len(token) + len(member) > SLOT_SIZE:
                member = b""  # too large for the slot: the sidecar finds it by token
            _ENTRY.pack_into(self.buffer, offset, len(queue), len(token), len(member))
            offset += _ENTRY.size
            for part in (queue, token, member):
                self.buffer[offset:offset + len(part)] = part
                offset += len(part)
        self.blob_len = offset - BLOB_START
        self.held_at = time.time()
        self._publish()

    def job_started(self, token: str, kill_at: float) -> None:
        self._begin()
        self.state, self.started, self.kill_at = RUNNING, time.time(), kill_at
        self.token = token.encode()[:TOKEN_ROOM]
        self.buffer[_HEADER.size:_HEADER.size + len(self.token)] = self.token
        self._publish()

    def job_ended(self) -> None:
        self._begin()
        self.state, self.kill_at = IDLE, 0.0
        self._publish()

    def stopping(self) -> None:
        self._begin()
        self.state = STOPPING
        self._publish()

    # -- the reader's side ----------------------------------------------------------------
    def read(self) -> Snapshot:
        while True:
            seq, state, started, kill_at, held_at, _, token_len = \
                _HEADER.unpack_from(self.buffer, 0)
            if seq % 2:
                time.sleep(0.0005)
                continue
            token = bytes(self.buffer[_HEADER.size:_HEADER.size + token_len]).decode()
            if struct.unpack_from("=Q", self.buffer, 0)[0] == seq:
                return Snapshot(seq, state, started, kill_at, held_at, token)

    def read_held(self) -> list[Held]:
        while True:
            seq, *_, blob_len, _ = _HEADER.unpack_from(self.buffer, 0)
            if seq % 2:
                time.sleep(0.0005)
                continue
            blob = bytes(self.buffer[BLOB_START:BLOB_START + blob_len])
            if struct.unpack_from("=Q", self.buffer, 0)[0] != seq:
                continue
            held, offset = [], 0
            while offset < len(blob):
                qlen, tlen, mlen = _ENTRY.unpack_from(blob, offset)
                offset += _ENTRY.size
                queue = blob[offset:offset + qlen].decode()
                token = blob[offset + qlen:offset + qlen + tlen].decode()
                member = blob[offset + qlen + tlen:offset + qlen + tlen + mlen]
                offset += qlen + tlen + mlen
                held.append(Held(queue, token, member or None))
            return held


class Sidecar:
    """Fork-and-watch. ``start()`` returns in the worker; the child runs ``_watch``."""

    def __init__(self, slot: JobSlot, *, driver_factory: Callable, on_kill: Callable,
                 stderr=None) -> None:
        self.slot = slot
        self.driver_factory = driver_factory  # builds a fresh driver in the child
        self.on_kill = on_kill  # (driver, Reservation) -> None: record the killed job's outcome
        self.stderr = stderr or sys.stderr
        self.pid: int | None = None

    def start(self) -> int:
        worker_pid = os.getpid()
        pid = os.fork()
        if pid:
            self.pid = pid
            return pid
        code = 0
        try:
            _become_sidecar()
            code = self._watch(worker_pid)
        except BaseException:  # never return into the worker's code
            logger.exception("worker sidecar failed")
            code = 1
        finally:
            os._exit(code)

    def stop(self) -> None:
        """Tell the sidecar to exit and reap it (the worker is stopping normally)."""
        if self.pid is None:
            return
        self.slot.stopping()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.pid = None

    # -- the child ----------------------------------------------------------------------
    def _watch(self, worker_pid: int) -> int:
        driver = self.driver_factory()
        retry_after = driver.config.retry_after
        renew_every = None if retry_after is None else max(retry_after / 3.0, 0.2)
        renewed_at = 0.0
        warned = ""
        while True:
            time.sleep(TICK)
            if os.getppid() != worker_pid:
                return 0  # the worker is gone: its leases bring its jobs back
            snap = self.slot.read()
            if snap.state == STOPPING:
                return 0
            now = time.time()
            if snap.state == RUNNING and snap.kill_at and now >= snap.kill_at:
                self._kill(worker_pid, driver, snap)
                return 0
            if renew_every is None or now - max(renewed_at, snap.held_at) < renew_every:
                continue
            try:
                lapsed = self._renew_all(driver, snap, now + retry_after)
            except Exception as exc:  # Redis away: try again next tick
                self._say(f"could not renew leases: {exc}")
                continue
            renewed_at = now
            if lapsed and warned != snap.token:
                warned = snap.token
                self._say(f"the lease of running job {snap.token} lapsed before it could be "
                          "renewed (Redis was away longer than retry_after?): the job may be "
                          "running in another worker too")

    def _renew_all(self, driver: QueueDriver, snap: Snapshot, until: float) -> bool:
        """Renew every held lease in one round trip; True if the running job's lapsed.

        Finished jobs whose acknowledgement is still to be sent stay held, so their
        leases are renewed too; an acknowledged one is simply gone (a no-op)."""
        held = self.slot.read_held()
        reservations, running = [], None
        for item in held:
            member = item.member or driver.find_member(item.queue, item.token)
            if member is None:
                continue
            if item.token == snap.token and snap.state == RUNNING:
                running = len(reservations)
            reservations.append(Reservation(item.queue, member, item.token))
        results = driver.renew_many(reservations, until) if reservations else []
        return running is not None and not results[running]

    def _kill(self, worker_pid: int, driver, snap: Snapshot) -> None:
        try:
            os.kill(worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self._say(f"killed worker {worker_pid}: its job {snap.token} was still running "
                  "past its timeout and grace")
        for item in self.slot.read_held():
            if item.token == snap.token:
                member = item.member or driver.find_member(item.queue, item.token)
                if member is not None:
                    self.on_kill(driver, Reservation(item.queue, member, item.token))
                return

    def _say(self, text: str) -> None:
        try:
            self.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} sidecar: {text}\n")
            self.stderr.flush()
        except Exception:
            pass


def _become_sidecar() -> None:
    """Shed what the child inherited from the worker and must not use or close."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP,
                   signal.SIGUSR2, signal.SIGCONT):
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        from django.db import connections

        for conn in connections.all(initialized_only=True):
            if conn.connection is not None:
                _INHERITED.append(conn.connection)  # never closed here: the socket is shared
                conn.connection = None
    except Exception:
        pass


_INHERITED: list = []
