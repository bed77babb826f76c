"""The walk of one job through the worker: how many stays in how many modules.

    .venv/bin/python bench/job_walk.py [--concurrency=N] [--async] [--show]

One no-op job (``bench.jobs.noop``; ``--async``: ``anoop``) is queued, then an
in-process Worker (sidecar on, ``--stop-when-empty``, concurrency 8 by default) takes
it, runs it and acknowledges it, with a profiler (``sys.setprofile`` and
``threading.setprofile``) watching every frame of ``queueing/``. The walk is:

* in the main thread, the store call that reserved the job (the in-flight table went
  from empty to one row), the kick that handed it to the slots, and the store call that
  acknowledged it (the table empty again); the loop's other turns (its waits, its looks
  at timeouts and cancels) are the loop's, not the job's;
* every frame of the slot threads (and the event loop's, for an async job) before the
  acknowledgement: claiming the row, preparing, running and writing down the job.

Figures: **stays** are runs of consecutive execution in one module (a call into another
module starts a stay, and so does the return to the caller's module); **modules** are
the distinct modules stayed in; **returns** are the stays in a module already visited
(stays - modules); **functions** are the distinct functions of ``queueing/`` entered.
``--show`` prints the walk, one stay a line. A constructor (``__init__``) is not a
stay: the per-job records (queueing/contract/records.py) write theirs out, where
``@dataclass``'s generated ones, compiled from a string, were never seen here.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import dataclass, field

from common import ROOT, setup_django

PACKAGE = os.path.join(str(ROOT), "queueing", "")
MAIN_ROOTS = {"next_batch", "flush_ack", "kick"}  # the loop's calls that a job rides on
JOB_THREADS = ("job-slot-", "job-event-loop")  # the threads that take and run jobs
WORKER = "queueing.worker."


def module_of(filename: str) -> str | None:
    if not filename.startswith(PACKAGE):
        return None
    return filename[len(PACKAGE) - len("queueing/"):-3].replace(os.sep, ".")


@dataclass
class Segment:
    thread: str
    order: int
    modules: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    rows_before: int = 0
    rows_after: int = 0


class Walk:
    """Records, per thread, the sequence of queueing/ modules executing."""

    def __init__(self, rows: callable) -> None:
        self.rows = rows  # how many rows the worker's in-flight table holds
        self.segments: list[Segment] = []
        self.lock = threading.Lock()
        self.local = threading.local()
        self.acked = False
        self.main = threading.main_thread()

    def _segment(self) -> Segment:
        with self.lock:
            segment = Segment(threading.current_thread().name, len(self.segments))
            self.segments.append(segment)
        return segment

    def profile(self, frame, event, arg) -> None:
        if event not in ("call", "return") or self.acked:
            return
        module = module_of(frame.f_code.co_filename)
        if module is None or frame.f_code.co_name == "__init__":
            return  # a record's constructor stores its fields: not a room visited
        local = self.local
        is_main = threading.current_thread() is self.main
        segment = getattr(local, "segment", None)
        if is_main:
            if segment is None:
                if event != "call" or frame.f_code.co_name not in MAIN_ROOTS:
                    return
                segment = local.segment = self._segment()
                local.root = frame
                segment.rows_before = self.rows()
        elif segment is None:
            if not threading.current_thread().name.startswith(JOB_THREADS):
                return  # the sidecar's keeper, the cancel watcher: not on the job's path
            segment = local.segment = self._segment()
        if event == "call":
            segment.modules.append(module)
            name = f"{module}.{frame.f_code.co_qualname}"
            if not frame.f_code.co_name.startswith("<") or \
                    frame.f_code.co_name == "<lambda>":
                segment.functions.append(name)
            return
        if is_main and frame is local.root:
            segment.rows_after = self.rows()
            local.segment = None
            if segment.rows_before and not segment.rows_after:
                self.acked = True
            return
        caller = frame.f_back
        while caller is not None and module_of(caller.f_code.co_filename) is None:
            caller = caller.f_back
        if caller is not None:
            segment.modules.append(module_of(caller.f_code.co_filename))

    def walk(self) -> list[Segment]:
        """The segments on the job's path, in the order they began."""
        kept, reserved = [], False
        for segment in self.segments:
            if segment.thread == self.main.name:
                if not reserved:
                    if segment.rows_before or not segment.rows_after:
                        continue  # the loop's turns before the job was reserved
                    reserved = True
                elif not (segment.rows_before and not segment.rows_after) and \
                        not segment.functions[0].endswith(".kick"):
                    continue  # a turn that neither handed the job on nor acknowledged it
            kept.append(segment)
        return kept


def stays(modules: list[str], within: str = "queueing.") -> list[str]:
    """Runs of one module in the sequence; modules outside `within` are passed through
    (a call from the worker into a driver and back is one stay in the worker's room)."""
    runs: list[str] = []
    for module in modules:
        if not module.startswith(within):
            continue
        if not runs or runs[-1] != module:
            runs.append(module)
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--async", dest="is_async", action="store_true")
    parser.add_argument("--show", action="store_true", help="print the walk")
    parser.add_argument("--rounds", type=int, default=3,
                        help="walks measured (the first loads what a job first needs)")
    args = parser.parse_args()
    if args.concurrency < 2:
        parser.error("the walk is measured through the slots: --concurrency of 2 or more")
    setup_django()
    from bench.jobs import anoop, noop
    from queueing.connections import redis_driver
    from queueing.worker.loop import Worker
    from queueing.worker.options import WorkerOptions

    driver = redis_driver()
    result = None
    for _ in range(args.rounds):
        driver.client.flushdb()
        (anoop if args.is_async else noop).using(queue="bench").delay()
        worker = Worker(driver, WorkerOptions(queues=("bench",), stop_when_empty=True,
                                              quiet=True, memory=0,
                                              concurrency=args.concurrency))
        # the table: the worker's ledger (before issue 49, its InFlight)
        table = worker.inflight if hasattr(worker, "inflight") else worker.ledger
        walk = Walk(lambda table=table: len(table))
        threading.setprofile(walk.profile)
        sys.setprofile(walk.profile)
        try:
            worker.run()
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
        assert worker.jobs_processed == 1, worker.jobs_processed
        result = walk.walk()
    assert result is not None
    kind = f"{'async' if args.is_async else 'sync'}, concurrency {args.concurrency}"
    for title, within in (("queueing.worker", WORKER), ("all of queueing", "queueing.")):
        runs = [run for segment in result for run in stays(segment.modules, within)]
        functions = {name for segment in result for name in segment.functions
                     if name.startswith(within)}
        modules = set(runs)
        if args.show:
            for segment in result:
                print(f"-- {segment.thread}")
                for run in stays(segment.modules, within):
                    print(f"   {run}")
            print("-- functions:", ", ".join(sorted(functions)))
        print(f"job walk ({kind}) in {title}: {len(runs)} stays in {len(modules)} "
              f"modules, {len(runs) - len(modules)} returns; {len(functions)} functions")
    driver.client.flushdb()
    return 0


if __name__ == "__main__":
    sys.exit(main())
