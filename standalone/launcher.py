"""Run the whole product in one foreground command: the dashboard under gunicorn plus the
Horizon master, stopped together (gracefully) on Ctrl-C, SIGTERM or SIGHUP.

`serve` owns its children (see docs/operations-lifecycle.md):
- each child dies with it, even when serve is SIGKILLed: they are started with
  PR_SET_PDEATHSIG (horizon.parent_death), and pass it on to their own children;
- a closed terminal (SIGHUP) stops everything like Ctrl-C; children run in their own
  sessions so a terminal's signals reach serve only, which relays one SIGTERM;
- the master is restarted when it exits: at once after a clean exit (`horizon_terminate`
  on deploy: the new master runs the new code), after a growing delay when it fails;
  the dashboard stays up meanwhile. If gunicorn exits, serve stops everything;
- the embedded redis-server (a connection with no URL, queueing/drivers/redis/embedded.py)
  is started by serve before its children, and stopped after them, when serve started
  it: it used to be started by whichever child connected first, daemonized, and it
  outlived serve (issue 47). One already running (another serve's, one started by
  hand) is left alone. A SIGKILLed serve cannot stop it (it is a daemon).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TextIO

from horizon.parent_death import child_setup
from horizon.supervisor.master import KILL_GRACE
from horizon.supervisor.process import restart_delay
from queueing.drivers.redis import EmbeddedRedis
from queueing.settings.config import queue_settings

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP)
POLL = 0.2  # seconds between looks at the children
# Seconds past the master's own last resort (HORIZON['stop_timeout'] + KILL_GRACE) that a
# child may take to stop before serve kills it: the master has killed what still ran and
# exits; serve only kills a child that hangs.
STOP_MARGIN = 10.0
HEALTHY_RUN = 30.0  # a master that ran this long and then failed starts a fresh delay series


def stop_wait() -> float:
    """Seconds serve gives its children to stop: the master's wait (stop_timeout, then
    its SIGKILL KILL_GRACE later) plus STOP_MARGIN. A HORIZON that does not parse gives
    the default stop timeout (the master then fails at start and has nothing to stop)."""
    from horizon.configuration.settings import HorizonConfigError, HorizonSettings, horizon_settings

    try:
        stop_timeout = horizon_settings().stop_timeout
    except HorizonConfigError:
        stop_timeout = HorizonSettings.__dataclass_fields__["stop_timeout"].default
    return stop_timeout + KILL_GRACE + STOP_MARGIN


def no_control_socket() -> list[str]:
    """gunicorn's flag turning its control socket off, where it has one (27+).

    Its default socket is one file in the user's home, ~/.gunicorn/gunicorn.ctl, for
    every gunicorn that user runs: a second site's dashboard took it over, and stopping
    either site removed the other's. serve never uses it (it signals its children)."""
    try:
        from gunicorn.config import KNOWN_SETTINGS
    except ImportError:
        return []
    return ["--no-control-socket"] if any(
        s.name == "control_socket_disable" for s in KNOWN_SETTINGS) else []


def start_embedded_redis() -> list[EmbeddedRedis]:
    """Start the embedded redis-servers of the configured connections that are not
    running yet; those started (for `Launcher.stop` to stop)."""
    started: list[EmbeddedRedis] = []
    folders: set[str] = set()
    for config in queue_settings().connections.values():
        if config.url or not config.embedded_dir or config.embedded_dir in folders:
            continue
        folders.add(config.embedded_dir)
        server = EmbeddedRedis(config.embedded_dir)
        if not server.is_running():
            server.ensure_running()
            started.append(server)
    return started


class Launcher:
    def __init__(self, *, bind: str, web_workers: int, stdout: TextIO) -> None:
        self.bind = bind
        self.web_workers = web_workers
        self.stdout = stdout
        self.children: dict[str, subprocess.Popen] = {}
        self.started_at: dict[str, float] = {}
        self.stopping = False
        self.master_failures = 0  # failed master exits in a row
        self.master_restart_at: float | None = None
        self.redis_started: list[EmbeddedRedis] = []

    def commands(self) -> dict[str, list[str]]:
        manage = os.path.abspath(sys.argv[0]) if sys.argv[0].endswith("manage.py") else None
        horizon = [sys.executable, manage, "horizon"] if manage else \
            [sys.executable, "-m", "django", "horizon"]
        gunicorn = [sys.executable, "-m", "gunicorn", "standalone.wsgi", "--bind", self.bind,
                    "--workers", str(self.web_workers), "--access-logfile", "-",
                    *no_control_socket()]
        return {"dashboard": gunicorn, "horizon": horizon}

    def say(self, message: str) -> None:
        """Write a line; a terminal that hung up (EIO) or a closed pipe must not stop the
        shutdown that the hang-up started."""
        try:
            self.stdout.write(message + "\n")
            self.stdout.flush()
        except (OSError, ValueError):
            pass

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def start(self, name: str) -> None:
        self.children[name] = subprocess.Popen(
            self.commands()[name], start_new_session=True,
            preexec_fn=child_setup(signal.SIGTERM))
        self.started_at[name] = time.monotonic()

    def run(self) -> int:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        self.redis_started = start_embedded_redis()
        for name in self.commands():
            self.start(name)
        self.say(f"Dashboard on http://{self.bind}/  (Ctrl-C stops everything)")
        code = 0
        while not self.stopping:
            dashboard = self.children["dashboard"]
            if dashboard.poll() is not None:
                self.say(f"dashboard exited with {dashboard.returncode}; stopping")
                code = dashboard.returncode or 1
                break
            self.watch_master(time.monotonic())
            time.sleep(POLL)
        self.stop()
        return code

    def watch_master(self, now: float) -> None:
        """Restart an exited master: at once after exit 0, else after restart_delay."""
        master = self.children["horizon"]
        if master.poll() is None:
            return
        if self.master_restart_at is None:
            lived = now - self.started_at["horizon"]
            if master.returncode == 0:
                self.master_failures = 0
                self.say("Horizon master exited (terminated); starting a new one")
            else:
                self.master_failures = 1 if lived >= HEALTHY_RUN else self.master_failures + 1
                delay = restart_delay(self.master_failures)
                self.say(f"Horizon master exited with {master.returncode}; restarting in "
                         f"{delay:.0f}s (the dashboard stays up)")
            self.master_restart_at = now + restart_delay(
                0 if master.returncode == 0 else self.master_failures)
        if now >= self.master_restart_at:
            self.master_restart_at = None
            self.start("horizon")

    def stop(self) -> None:
        wait = stop_wait()
        self.say(f"Stopping: workers finish their running jobs first (jobs still running "
                 f"after stop_timeout go back to their queue, uncounted; at most "
                 f"{wait:.0f}s)...")
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + wait
        for child in self.children.values():
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for server in self.redis_started:  # after every child that used it
            self.say(f"Stopping the embedded Redis in {server.directory}")
            server.stop()
