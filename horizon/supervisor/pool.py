"""The worker processes serving one queue (or, with balance off, the supervisor's queue list)."""
from __future__ import annotations

import signal
import time
from collections.abc import Callable, Collection

from horizon.supervisor.balancer import pick_to_stop
from horizon.supervisor.process import WorkerProcess
from horizon.supervisor.process_stats import resident_mb


class ProcessPool:
    def __init__(self, queues: tuple[str, ...], arguments: Callable[[], list[str]], *,
                 nice: int = 0, output=None, log: Callable[[str], None] = print) -> None:
        self.queues = queues
        self.arguments = arguments
        self.nice = nice
        self.output = output
        self.log = log
        self.processes: list[WorkerProcess] = []
        self.terminating: list[WorkerProcess] = []
        self.paused = False

    @property
    def name(self) -> str:
        return ",".join(self.queues)

    def __len__(self) -> int:
        return len(self.processes)

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes + self.terminating if p.running() and p.pid]

    def described(self) -> list[dict]:
        """Each running process: pid, this pool, when it started (epoch seconds), its
        resident memory (process_stats), and whether it is draining."""
        return [{"pid": p.pid, "pool": self.name, "started_at": p.started_wall,
                 "memory_mb": resident_mb(p.pid), "draining": draining}
                for group, draining in ((self.processes, False), (self.terminating, True))
                for p in group if p.pid and p.running()]

    def scale(self, count: int, busy: Collection[int] = ()) -> None:
        """Start or stop workers to have `count`. Stopping picks idle workers first
        (balancer.pick_to_stop): `busy` are the pids running a job now, which would
        drain for as long as it runs."""
        while len(self.processes) < count:
            process = WorkerProcess(self.arguments(), nice=self.nice, output=self.output)
            process.start()
            if self.paused:
                process.signal(signal.SIGUSR2)
            self.processes.append(process)
            self.log(f"started worker {process.pid} for {self.name}")
        if len(self.processes) <= count:
            return
        chosen = set(pick_to_stop([(p.pid or 0, p.pid in busy) for p in self.processes],
                                  len(self.processes) - count))
        for process in [p for p in self.processes if (p.pid or 0) in chosen]:
            self.processes.remove(process)
            process.terminate()
            self.terminating.append(process)
            state = ("busy: its job finishes, or is handed back uncounted at the stop "
                     "timeout" if process.pid in busy else "idle")
            self.log(f"stopping worker {process.pid} of {self.name} (scaling down; {state})")

    def draining(self) -> int:
        """Workers asked to stop that still run (finishing their job)."""
        return sum(1 for p in self.terminating if p.running())

    def monitor(self, now: float | None = None) -> None:
        """Restart dead workers (unless paused), forget terminated ones that exited.

        A worker that had reported ready is replaced on this turn; one that died before
        (a start-up crash) waits restart_delay, growing with each such crash in a row.
        """
        now = time.monotonic() if now is None else now
        still = []
        for process in self.terminating:
            if process.running():
                still.append(process)
            else:
                process.forget()
        self.terminating = still
        if self.paused:
            return
        for process in self.processes:
            process.check_ready()
            if process.running():
                continue
            if not process.exit_noted:
                process.note_exit(now)
                code = process.exit_code()
                how = f"was killed by signal {-code}" if code is not None and code < 0 \
                    else f"exited with {code}"
                if process.startup_crashes:
                    self.log(f"worker {process.pid} of {self.name} {how} before it was "
                             f"ready; restarting in {process.restart_at - now:.0f}s")
                else:
                    self.log(f"worker {process.pid} of {self.name} {how}; restarting")
            if now >= process.restart_at:
                process.arguments = self.arguments()
                process.start()
                if self.paused:
                    process.signal(signal.SIGUSR2)

    def pause(self) -> None:
        self.paused = True
        for process in self.processes:
            process.signal(signal.SIGUSR2)

    def resume(self) -> None:
        self.paused = False
        for process in self.processes:
            process.signal(signal.SIGCONT)

    def terminate(self, now: float | None = None) -> None:
        """Ask every worker to stop. The kill clock of each starts now, those a
        scale-down asked to drain earlier included: their own stop bound (stopping.py)
        ends their drain first, and the terminate's last-resort SIGKILL must not fall
        on them the instant it begins."""
        now = time.monotonic() if now is None else now
        for process in self.terminating:
            process.terminating_since = now
        for process in self.processes:
            process.terminate()
            process.terminating_since = now
        self.terminating.extend(self.processes)
        self.processes = []

    def kill_overdue(self, grace: float, now: float | None = None) -> int:
        """SIGKILL workers still running `grace` seconds after they were asked to stop."""
        now = time.monotonic() if now is None else now
        killed = 0
        for process in self.terminating:
            if process.running() and process.terminating_since is not None and \
                    now - process.terminating_since > grace:
                process.kill()
                killed += 1
        return killed

    def all_stopped(self) -> bool:
        return not any(p.running() for p in self.processes + self.terminating)
