"""Exit 0 when Horizon runs, 1 when paused, 2 when inactive, 3 when Redis cannot be reached
(for scripts and probes: "cannot tell" must not read as "paused" or "inactive")."""
import sys

from horizon.management.commands._control import EXIT_UNREACHABLE, reachable_client
from horizon.repositories import state
from queueing.management.base import ProductCommand

EXIT_CODES = {"running": 0, "paused": 1, "inactive": 2}


class Command(ProductCommand):
    help = ("Show whether Horizon is running (exit 0), paused (1) or inactive (2); "
            f"exit {EXIT_UNREACHABLE} when Redis cannot be reached.")

    def handle(self, *args, **options):
        status = state.overall_status(reachable_client())
        self.stdout.write(f"Horizon is {status}.")
        code = EXIT_CODES[status]
        if code:
            sys.exit(code)
