"""Terminate every master (or `--master NAME` only) gracefully: workers finish their job."""
import time

from django.core.management.base import CommandError

from horizon.repositories import horizon_client, state

from ._control import ControlCommand


class Command(ControlCommand):
    help = "Terminate Horizon gracefully; with --wait, return once every master has exited."
    command = "terminate"
    done = "Sent terminate to Horizon"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--wait", action="store_true")
        parser.add_argument("--wait-timeout", type=float, default=600.0)

    def handle(self, *args, wait, wait_timeout, masters, **options):
        names = set(self.send(masters))
        if not wait:
            return
        client = horizon_client()
        deadline = time.monotonic() + wait_timeout
        while time.monotonic() < deadline:
            if not names & {m.name for m in state.masters(client)}:
                self.stdout.write("Horizon has terminated.")
                return
            time.sleep(0.5)
        raise CommandError(f"masters still running after {wait_timeout:g}s")
