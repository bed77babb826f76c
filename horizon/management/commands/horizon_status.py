"""Exit 0 when Horizon runs, 1 when paused, 2 when inactive (for scripts and probes)."""
import sys

from django.core.management.base import BaseCommand

from horizon.repositories import horizon_client, state

EXIT_CODES = {"running": 0, "paused": 1, "inactive": 2}


class Command(BaseCommand):
    help = "Show whether Horizon is running (exit 0), paused (1) or inactive (2)."

    def handle(self, *args, **options):
        status = state.overall_status(horizon_client())
        self.stdout.write(f"Horizon is {status}.")
        code = EXIT_CODES[status]
        if code:
            sys.exit(code)
