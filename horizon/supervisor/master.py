"""The master supervisor: one per host, runs every configured supervisor.

Its loop is a short list of named steps (after Horizon's): handle signals -> handle
commands from Redis -> scale and watch pools -> publish state -> metrics upkeep.
SIGTERM/SIGINT/SIGQUIT terminate gracefully, SIGUSR2 pauses, SIGCONT continues.
"""
from __future__ import annotations

import os
import socket
import sys
import time

import redis

from horizon import keys
from horizon.configuration.settings import HorizonSettings
from horizon.repositories import commands, events, metrics, recent, snapshot_extras, state
from horizon.supervisor import staleness
from horizon.supervisor.duties import Duties
from horizon.supervisor.supervisor import Supervisor
from horizon.supervisor.wakeup import SignalWakeup
from queueing.drivers.state_store import RedisClient
from queueing.observability.job_log import OutputStream
from queueing.observability.redaction import for_log
from queueing.observability.systemd import Notifier
from queueing.worker.process_control import SignalFlags

LOOP_INTERVAL = 0.5  # seconds between loop turns
# Seconds past HORIZON['stop_timeout'] before a terminate SIGKILLs a worker that still
# runs: the last resort. By the stop timeout each worker has handed its running jobs back
# itself (queueing/worker/stopping.py), and its sidecar kills one stuck in C kill_grace
# (3 s) later and hands the job back the same way.
KILL_GRACE = 10.0


class AlreadyRunning(Exception):
    pass


class Master:
    def __init__(self, config: HorizonSettings, client: RedisClient, *,
                 stdout: OutputStream | None = None, worker_output=None,
                 notifier: Notifier | None = None) -> None:
        self.config = config
        self.client = client
        self.stdout = stdout or sys.stdout
        self.name = config.name
        self.flags = SignalFlags()
        self.notifier = notifier or Notifier()  # systemd's Type=notify and watchdog
        self.paused = False
        self.terminating_since: float | None = None
        self.started_at = time.time()
        self.supervisors = [Supervisor(c, self.name, output=worker_output, log=self.log,
                                       stop_timeout=config.stop_timeout)
                            for c in config.supervisors]
        self._snapshot_checked = 0.0
        self.redis_away_since: float | None = None  # when publishing first failed (an outage)
        self.wakeup = SignalWakeup()  # a worker's death or a signal ends the nap early
        # Schedules and long-wait alerts (issue 14): one object, ticked once per turn.
        self.duties = Duties.for_master(config, client, owner=self.name, log=self.log)

    def log(self, message: str) -> None:
        try:
            self.stdout.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {for_log(message)}\n")
            self.stdout.flush()
        except (OSError, ValueError):
            pass  # a closed terminal or pipe must not take the master down mid-shutdown

    # -- lifecycle ----------------------------------------------------------------------
    def ensure_unique(self) -> None:
        """Refuse to start while another live master uses this name; a stale entry left by
        a killed master is taken over (see staleness.is_stale)."""
        for other in state.masters(self.client):
            if other.name != self.name:
                continue
            if staleness.is_stale(other, host=socket.gethostname(), own_pid=os.getpid(),
                                  now=time.time(),
                                  process_started_at=staleness.process_started_at):
                self.log(f"taking over from stale master {self.name!r} (pid {other.pid} on "
                         f"{other.host}, last heartbeat {time.time() - other.heartbeat:.0f}s "
                         "ago)")
                continue
            raise AlreadyRunning(
                f"a master named {self.name!r} is already running (pid {other.pid} on "
                f"{other.host}); set $HORIZON_NAME to run a second one")

    def run(self) -> int:
        self.ensure_unique()
        self.flags.install(on_alarm=lambda *_: None)
        self.wakeup.install()
        try:
            self.log(f"Horizon master {self.name!r} started (pid {os.getpid()}, "
                     f"environment {self.config.environment})")
            events.record("master_start", f"master {self.name!r} started on "
                          f"{socket.gethostname()} (pid {os.getpid()})", client=self.client)
            for supervisor in self.supervisors:
                supervisor.start()
            self.publish()
            self.notifier.ready(f"supervising {len(self.supervisors)} supervisor(s)")
            while True:
                self.notifier.watchdog()
                self.handle_signals()
                self.handle_commands()
                if self.terminating_since is not None:
                    if self.finish_terminating():
                        return 0
                else:
                    for supervisor in self.supervisors:
                        self.supervise(supervisor)
                self.publish()
                self.metrics_upkeep()
                if self.terminating_since is None:
                    self.duties.tick()  # schedules, long-wait alerts (supervisor/duties.py)
                self.wakeup.nap(LOOP_INTERVAL)
        finally:
            self.wakeup.uninstall()
            self.flags.uninstall()

    # -- steps --------------------------------------------------------------------------
    def supervise(self, supervisor) -> None:
        """Scale and watch one supervisor's pools. Redis away (stalled, restarting, failing
        over) skips this turn's scaling; the workers are watched all the same, so a stall
        never costs the master or its workers (it crashed here, and `serve` then
        restarted every worker)."""
        try:
            supervisor.auto_scale()
        except redis.RedisError as exc:
            self.log(f"[{supervisor.name}] could not read the load to scale, keeping "
                     f"{sum(len(p) for p in supervisor.pools.values())} process(es): {exc}")
        supervisor.monitor()

    def handle_signals(self) -> None:
        if self.flags.quit and self.terminating_since is None:
            self.terminate()
        if self.flags.paused != self.paused:
            self.pause() if self.flags.paused else self.resume()

    def handle_commands(self) -> None:
        try:
            pending = commands.drain(self.client, self.name)
        except redis.RedisError as exc:
            self.log(f"could not read commands: {exc}")
            return
        for command in pending:
            name, args = command["command"], command.get("args") or {}
            if name == "pause":
                self.flags.paused = True
                self.pause()
            elif name == "continue":
                self.flags.paused = False
                self.resume()
            elif name == "terminate" and self.terminating_since is None:
                self.terminate()  # a second one must not push the last resort back
            elif name in ("pause_supervisor", "continue_supervisor"):
                for supervisor in self.supervisors:
                    if supervisor.name == args.get("name"):
                        supervisor.pause() if name == "pause_supervisor" else supervisor.resume()

    def pause(self) -> None:
        self.paused = True
        for supervisor in self.supervisors:
            supervisor.pause()

    def resume(self) -> None:
        self.paused = False
        for supervisor in self.supervisors:
            supervisor.resume()

    def terminate(self) -> None:
        self.log(f"terminating: workers finish their running jobs for up to "
                 f"{self.config.stop_timeout:g}s (stop_timeout), hand back what still "
                 "runs uncounted, then exit")
        self.notifier.stopping()
        self.terminating_since = time.monotonic()
        for supervisor in self.supervisors:
            if supervisor.paused:
                supervisor.resume()  # a paused worker must wake up to see SIGTERM
            supervisor.terminate()

    def kill_after(self) -> float:
        """Seconds after the terminate before a worker still running is SIGKILLed."""
        return self.config.stop_timeout + KILL_GRACE

    def finish_terminating(self) -> bool:
        grace = self.kill_after()
        for supervisor in self.supervisors:
            killed = supervisor.kill_overdue(grace)
            if killed:
                self.log(f"[{supervisor.name}] killed {killed} worker(s) still running "
                         f"{grace:g}s after terminate")
        if all(s.all_stopped() for s in self.supervisors):
            state.forget_master(self.client, self.name, [s.name for s in self.supervisors])
            events.record("master_stop", f"master {self.name!r} stopped on "
                          f"{socket.gethostname()}", client=self.client)
            self.log("all workers stopped; master exiting")
            return True
        return False

    def publish(self) -> None:
        if self.terminating_since is not None and all(s.all_stopped() for s in self.supervisors):
            return
        try:
            for supervisor in self.supervisors:
                state.publish_supervisor(self.client, supervisor.state())
            state.publish_master(self.client, state.MasterState(
                name=self.name, pid=os.getpid(), host=socket.gethostname(),
                status="paused" if self.paused else "running", started_at=self.started_at,
                environment=self.config.environment,
                supervisors=[s.name for s in self.supervisors]))
        except redis.RedisError as exc:
            if self.redis_away_since is None:
                self.redis_away_since = time.time()
            self.log(f"could not publish state: {exc}")
            return
        if self.redis_away_since is not None:
            self.outage_over(self.redis_away_since, time.time())

    def outage_over(self, began: float, ended: float) -> None:
        """Horizon's Redis answers again: the outage becomes one event (written now, as
        it could not be while Redis was away)."""
        self.redis_away_since = None
        self.log(f"Redis answers again after {ended - began:.0f}s")
        events.record("outage", f"Horizon's Redis ({self.config.connection}) did not "
                      f"answer master {self.name!r} for {ended - began:.0f} s",
                      at=began, until=ended, client=self.client)

    def metrics_upkeep(self) -> None:
        """Minute snapshots and trimming, with no cron: one master takes them at a time."""
        now = time.time()
        if now - self._snapshot_checked < 1.0:
            return
        self._snapshot_checked = now
        try:
            interval = self.config.snapshot_interval
            if self.client.set(keys.snapshot_lock(), self.name, nx=True,
                               ex=max(int(interval), 1)):
                metrics.take_snapshots(
                    self.client, now=now, keep_minutes=self.config.trim_metrics_minutes,
                    queues=snapshot_extras.configured_queues(self.config))
                recent.trim(self.client, self.config.trim_completed_minutes, now=now)
        except redis.RedisError as exc:
            self.log(f"metrics upkeep failed: {exc}")

