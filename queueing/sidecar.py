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
from dataclasses import dataclass
from typing import Callable

logger = logging.getLogger("queueing.worker")

TICK = 0.1  # seconds between the sidecar's looks at the slot
# Header: seq (Q), state (q: 0 idle, 1 running, 2 stopping), started (d), kill_at (d,
# 0 = none), member length (Q), queue length (Q), token length (Q); then queue, token,
# member.
_HEADER = struct.Struct("=QqddQQQ")
QUEUE_ROOM = 256
TOKEN_ROOM = 256
SLOT_SIZE = 32 * 1024 * 1024  # address space only: pages are used as entries need them
MEMBER_ROOM = SLOT_SIZE - _HEADER.size - QUEUE_ROOM - TOKEN_ROOM
IDLE, RUNNING, STOPPING = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Running:
    """What the sidecar reads about the job in flight."""

    seq: int
    started: float
    kill_at: float
    queue: str
    token: str
    member: bytes | None  # None when the entry was too large for the slot


class JobSlot:
    """Shared memory between the worker (writer) and its sidecar (reader).

    A seqlock: the writer makes ``seq`` odd while it writes and even when done; a
    reader that sees an odd or changed ``seq`` reads again.
    """

    def __init__(self) -> None:
        self.buffer = mmap.mmap(-1, SLOT_SIZE, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
        self.seq = 0
        _HEADER.pack_into(self.buffer, 0, 0, IDLE, 0.0, 0.0, 0, 0, 0)

    def _write(self, state: int, started: float, kill_at: float, queue: bytes = b"",
               token: bytes = b"", member: bytes = b"") -> None:
        self.seq += 1  # odd: writing
        struct.pack_into("=Q", self.buffer, 0, self.seq)
        base = _HEADER.size
        fits = len(member) <= MEMBER_ROOM
        self.buffer[base:base + len(queue)] = queue
        self.buffer[base + QUEUE_ROOM:base + QUEUE_ROOM + len(token)] = token
        if fits and member:
            start = base + QUEUE_ROOM + TOKEN_ROOM
            self.buffer[start:start + len(member)] = member
        self.seq += 1  # even: done
        _HEADER.pack_into(self.buffer, 0, self.seq, state, started, kill_at,
                          len(member) if fits else 0, len(queue), len(token))

    def job_started(self, queue: str, token: str, member: bytes, kill_at: float) -> None:
        self._write(RUNNING, time.time(), kill_at, queue.encode()[:QUEUE_ROOM],
                    token.encode()[:TOKEN_ROOM], member)

    def job_ended(self) -> None:
        self.seq += 1
        struct.pack_into("=Q", self.buffer, 0, self.seq)
        self.seq += 1
        _HEADER.pack_into(self.buffer, 0, self.seq, IDLE, 0.0, 0.0, 0, 0, 0)

    def stopping(self) -> None:
        self.seq += 2
        _HEADER.pack_into(self.buffer, 0, self.seq, STOPPING, 0.0, 0.0, 0, 0, 0)

    def read(self) -> tuple[int, Running | None]:
        """(state, the running job or None), consistent even while the worker writes."""
        while True:
            seq, state, started, kill_at, member_len, queue_len, token_len = \
                _HEADER.unpack_from(self.buffer, 0)
            if seq % 2:
                time.sleep(0.0005)
                continue
            running = None
            if state == RUNNING:
                base = _HEADER.size
                start = base + QUEUE_ROOM + TOKEN_ROOM
                running = Running(
                    seq, started, kill_at,
                    bytes(self.buffer[base:base + queue_len]).decode(),
                    bytes(self.buffer[base + QUEUE_ROOM:base + QUEUE_ROOM + token_len]).decode(),
                    bytes(self.buffer[start:start + member_len]) if member_len else None)
            if struct.unpack_from("=Q", self.buffer, 0)[0] == seq:
                return state, running


class Sidecar:
    """Fork-and-watch. ``start()`` returns in the worker; the child runs ``_watch``."""

    def __init__(self, slot: JobSlot, *, driver_factory: Callable, on_kill: Callable,
                 stderr=None) -> None:
        self.slot = slot
        self.driver_factory = driver_factory  # builds a fresh driver in the child
        self.on_kill = on_kill  # (driver, Running) -> None: record the killed job's outcome
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
        renewed: tuple[int, float] = (0, 0.0)  # (seq, when) of the last renewal
        warned_seq = 0
        while True:
            time.sleep(TICK)
            if os.getppid() != worker_pid:
                return 0  # the worker is gone: its lease brings the job back
            state, running = self.slot.read()
            if state == STOPPING:
                return 0
            if running is None:
                continue
            now = time.time()
            if running.kill_at and now >= running.kill_at:
                self._kill(worker_pid, driver, running)
                return 0
            if renew_every is None:
                continue
            last = renewed[1] if renewed[0] == running.seq else running.started
            if now - last < renew_every:
                continue
            try:
                held = self._renew(driver, running, now + retry_after)
            except Exception as exc:  # Redis away: try again next tick
                self._say(f"could not renew the lease of {running.token}: {exc}")
                continue
            renewed = (running.seq, now)
            if not held and warned_seq != running.seq:
                warned_seq = running.seq
                self._say(f"the lease of {running.token} on {running.queue} lapsed before it "
                          "could be renewed (Redis was away longer than retry_after?): the "
                          "job may be running in another worker too")

    def _renew(self, driver, running: Running, until: float) -> bool:
        member = running.member or find_member(driver, running.queue, running.token)
        if member is None:
            return False
        from .drivers.redis import Reservation

        return driver.renew(Reservation(running.queue, member, running.token), until)

    def _kill(self, worker_pid: int, driver, running: Running) -> None:
        try:
            os.kill(worker_pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        self._say(f"killed worker {worker_pid}: its job {running.token} on {running.queue} "
                  "was still running past its timeout and grace")
        member = running.member or find_member(driver, running.queue, running.token)
        if member is None:
            return
        from .drivers.redis import Reservation

        self.on_kill(driver, Reservation(running.queue, member, running.token))

    def _say(self, text: str) -> None:
        try:
            self.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} sidecar: {text}\n")
            self.stderr.flush()
        except Exception:
            pass


def find_member(driver, queue: str, token: str) -> bytes | None:
    """The reserved member holding `token` (for entries too large for the slot)."""
    pattern = f'*"reservation":"{token}"*'
    for member in driver.client.zscan_iter(driver.keys(queue).reserved, match=pattern):
        return member[0]
    return None


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
