"""How a worker's sidecar is assembled: forked from the worker, or as a fresh interpreter.

The worker builds its sidecar here (``build``): the driver it renews with, the settlers
of running jobs (abandoned.py) and the way to start work in a fresh interpreter
(``FreshStarter``). A fresh interpreter (``python -c``, then ``main``) rebuilds the
same sidecar from a JSON spec the worker wrote on its stdin: the worker's ``sys.path``
and settings module, its connection, options and name, and the lease timing, so it
settles a job exactly as the worker would have.

Why fresh interpreters at all: a forked copy of the worker inherits its locks (held by
threads that do not exist in the copy) and SQLite's per-process lock bookkeeping (a
connection opened there takes no real lock). The forked sidecar therefore never runs a
job's code or opens a database for it (sidecar.py), and a worker whose connection is a
database on SQLite starts its whole sidecar fresh.

A fresh interpreter costs about 0.5 s of CPU and its own memory (Django loaded again);
the forked sidecar costs nothing and shares the worker's pages. So the fork stays the
rule, and fresh processes are started only to settle a dead worker's running jobs
(rare) or for a worker on SQLite (a development set-up).
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from queueing import connections
from queueing.contract.records import record
from queueing.contract.roles import QueueDriver
from queueing.observability.job_log import JobLog, level_named
from queueing.worker.abandoned import AbandonedJobs
from queueing.worker.options import WorkerOptions
from queueing.worker.policy import LeaseTiming
from queueing.worker.settling import Death, Settlers
from queueing.worker.sidecar import Sidecar
from queueing.worker.table_memory import Row, TableMemory

# Run by the fresh interpreter: the signals a sidecar ignores are ignored before anything
# else (a SIGUSR2 meant for the worker's process group would otherwise end it while it
# loads), the spec is read, the worker's import path put in place and Django loaded
# (this module's imports need the apps).
BOOT = ("import signal as s\n"
        "for n in ('SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGUSR2', 'SIGCONT', 'SIGTERM'):\n"
        "    s.signal(getattr(s, n), s.SIG_IGN)\n"
        "import json, sys\n"
        "spec = json.loads(sys.stdin.buffer.read())\n"
        "sys.path[:] = spec['path']\n"
        "import os, django\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = spec['settings']\n"
        "django.setup()\n"
        "from queueing.worker.sidecar_process import main\n"
        "main(spec)\n")


def uses_sqlite(driver: QueueDriver) -> bool:
    """The driver keeps its jobs in a SQLite database (the database driver on SQLite)."""
    alias = getattr(driver, "alias", None)
    if not isinstance(alias, str):
        return False
    from django.db import connections as databases

    return databases[alias].vendor == "sqlite"


def driver_factory(connection: str, timing: LeaseTiming | None) -> Callable[[], QueueDriver]:
    def fresh_driver() -> QueueDriver:
        """In the sidecar: its own driver, whose replies time out well before a lease
        could lapse (a renewal stuck on a dead socket is retried on a new one)."""
        return connections.driver_with_timeout(connection, timing.attempt if timing else 1.0)

    return fresh_driver


def settlers(options: WorkerOptions, log: JobLog, owner: str) -> Settlers:
    abandoned = AbandonedJobs(options, log, owner)
    return Settlers(abandoned.killed, abandoned.lost, abandoned.fenced,
                    abandoned.free_slots)


@record(frozen=True, slots=True)
class FreshStarter:
    """Starts a fresh interpreter that rebuilds this worker's sidecar (see the module's
    docstring); what it needs travels as JSON on its stdin."""

    connection: str
    owner: str
    options: WorkerOptions
    timing: LeaseTiming | None
    worker_pid: int

    def watch(self, memory: TableMemory) -> subprocess.Popen:
        return self._start({"mode": "watch", "memory_fd": memory.fd}, pass_fds=(memory.fd,))

    def settle(self, rows: list[Row], death: Death,
               renewed: dict[str, float]) -> subprocess.Popen:
        return self._start({"mode": "settle", "rows": [row_json(r) for r in rows],
                            "hung": death.hung.token if death.hung else None,
                            "fenced": death.fenced,
                            "renewed": {r.token: renewed[r.token] for r in rows
                                        if r.token in renewed}})

    def _start(self, work: dict[str, Any], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        settings_module = os.environ.get("DJANGO_SETTINGS_MODULE")
        if not settings_module:
            raise ValueError("Django's settings were configured in code, not by "
                             "DJANGO_SETTINGS_MODULE, so a fresh process cannot load them")
        spec = {"path": sys.path, "settings": settings_module,
                "connection": self.connection, "owner": self.owner,
                "options": dataclasses.asdict(self.options),
                "timing": dataclasses.asdict(self.timing) if self.timing else None,
                "worker_pid": self.worker_pid, **work}
        process = subprocess.Popen([sys.executable, "-c", BOOT], stdin=subprocess.PIPE,
                                   pass_fds=pass_fds)
        assert process.stdin is not None
        try:
            process.stdin.write(json.dumps(spec).encode())
        finally:
            process.stdin.close()
        return process


def row_json(row: Row) -> dict[str, Any]:
    fields = dataclasses.asdict(row)
    fields["member"] = None if row.member is None else row.member.decode("latin-1")
    return fields


def row_from_json(fields: dict[str, Any]) -> Row:
    member = fields["member"]
    return Row(**{**fields, "member": None if member is None else member.encode("latin-1")})


def options_from_json(fields: dict[str, Any]) -> WorkerOptions:
    tuples = {f.name for f in dataclasses.fields(WorkerOptions)
              if str(f.type).startswith("tuple")}
    values: dict[str, Any] = {k: tuple(v) if k in tuples and v is not None else v
                              for k, v in fields.items()}
    return WorkerOptions(**values)


def main(spec: dict[str, Any]) -> None:
    """The fresh interpreter, Django loaded as the worker loaded it: rebuild the sidecar,
    and watch the worker's table or settle the rows it was given; then exit."""
    code = 1
    try:
        options = options_from_json(spec["options"])
        timing = LeaseTiming(**spec["timing"]) if spec["timing"] else None
        log = JobLog(None if options.quiet else sys.stdout, worker=spec["owner"],
                     level=level_named(options.log_level))
        memory = TableMemory.attach(spec["memory_fd"]) if spec["mode"] == "watch" else None
        sidecar = Sidecar(memory,  # type: ignore[arg-type]  # settling reads no table
                          driver_factory=driver_factory(spec["connection"], timing),
                          settlers=settlers(options, log, spec["owner"]),
                          stderr=sys.stderr, timing=timing,
                          kill_grace=options.kill_grace)
        signal.signal(signal.SIGTERM, sidecar.on_term)
        if spec["mode"] == "watch":
            code = sidecar.watch(spec["worker_pid"])
        else:
            rows = [row_from_json(r) for r in spec["rows"]]
            hung = next((r for r in rows if r.token == spec["hung"]), None)
            sidecar.settle(rows, spec["worker_pid"], Death(hung=hung, fenced=spec["fenced"]),
                           spec["renewed"])
            code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
