"""Run the whole product in one foreground command: the dashboard under gunicorn plus the
Horizon master, stopped together (gracefully) on Ctrl-C or SIGTERM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import TextIO


class Launcher:
    def __init__(self, *, bind: str, web_workers: int, stdout: TextIO) -> None:
        self.bind = bind
        self.web_workers = web_workers
        self.stdout = stdout
        self.children: dict[str, subprocess.Popen] = {}
        self.stopping = False

    def commands(self) -> dict[str, list[str]]:
        manage = os.path.abspath(sys.argv[0]) if sys.argv[0].endswith("manage.py") else None
        horizon = [sys.executable, manage, "horizon"] if manage else \
            [sys.executable, "-m", "django", "horizon"]
        gunicorn = [sys.executable, "-m", "gunicorn", "horizon.wsgi", "--bind", self.bind,
                    "--workers", str(self.web_workers), "--access-logfile", "-"]
        return {"dashboard": gunicorn, "horizon": horizon}

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
            signal.signal(signum, self._on_signal)
        for name, command in self.commands().items():
            self.children[name] = subprocess.Popen(command, start_new_session=True)
        self.stdout.write(f"Dashboard on http://{self.bind}/  (Ctrl-C stops everything)\n")
        self.stdout.flush()
        code = 0
        while not self.stopping:
            for name, child in self.children.items():
                if child.poll() is not None:
                    self.stdout.write(f"{name} exited with {child.returncode}; stopping\n")
                    code = child.returncode or 1
                    self.stopping = True
            time.sleep(0.2)
        self.stdout.write("Stopping: workers finish their current job first...\n")
        self.stdout.flush()
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for name, child in self.children.items():
            try:
                child.wait(timeout=120)
            except subprocess.TimeoutExpired:
                child.kill()
        return code
