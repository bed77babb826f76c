"""List failed jobs, newest first."""
from django.core.management.base import BaseCommand

from queueing import failed


class Command(BaseCommand):
    help = "List failed jobs, newest first."

    def add_arguments(self, parser):
        parser.add_argument("--queue", default=None)
        parser.add_argument("--limit", type=int, default=100)

    def handle(self, *args, queue, limit, **options):
        rows = list(failed.matching(queue=queue)[:limit])
        if not rows:
            self.stdout.write("No failed jobs.")
            return
        header = ("UUID", "Connection", "Queue", "Job", "Failed at", "Exception")
        table = [header] + [(
            r.uuid, r.connection, r.queue, r.job or "?", r.failed_at.strftime("%Y-%m-%d %H:%M:%S"),
            (r.exception.splitlines() or [""])[0][:80],
        ) for r in rows]
        widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
        for row in table:
            self.stdout.write("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip())
