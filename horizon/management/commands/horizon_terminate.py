"""Terminate every master (or `--master NAME` only) gracefully: workers finish their running
jobs, or hand them back uncounted at HORIZON['stop_timeout'] (a stop never fails a job)."""
import time

from django.core.management.base import CommandError

from horizon.management.commands._control import ControlCommand, reachable_client
from horizon.repositories import state


class Command(ControlCommand):
    help = "Terminate Horizon gracefully; with --wait, return once every master has exited."
    command = "terminate"
    done = "Sent terminate to Horizon"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--wait-timeout", type=float, default=600.0)

    def handle(self, *args, masters, **options):
        wait, wait_timeout = options["wait"], options["wait_timeout"]
        client = reachable_client()
        # A master is identified by name, pid and start: under `serve` (or systemd) a new
        # master with the same name may be up again before this command looks.
        before = {(m.name, m.pid, m.started_at) for m in state.masters(client)
                  if not masters or m.name in masters}
        self.send(masters)
        if not wait:
            return
        deadline = time.monotonic() + wait_timeout
        while time.monotonic() < deadline:
            now = {(m.name, m.pid, m.started_at) for m in state.masters(client)}
            if not before & now:
                self.stdout.write("Horizon has terminated.")
                return
            time.sleep(0.5)
        raise CommandError(f"masters still running after {wait_timeout:g}s")
