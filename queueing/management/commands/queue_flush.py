"""Delete all failed jobs, or those older than --hours."""
from django.core.management.base import BaseCommand

from queueing import failed


class Command(BaseCommand):
    help = "Delete every failed job (or only those that failed more than --hours ago)."

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=float, default=None)

    def handle(self, *args, hours, **options):
        count = failed.flush(hours)
        scope = f" older than {hours:g} hours" if hours is not None else ""
        self.stdout.write(self.style.SUCCESS(f"Deleted {count} failed job(s){scope}."))
