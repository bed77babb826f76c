"""List failed jobs, newest first (masked, one line each: see queueing/redaction.py)."""
from django.core.management.base import BaseCommand

from queueing import failed
from queueing.redaction import for_log

EXCEPTION_WIDTH = 80


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
            for_log(r.uuid, 100), r.connection, r.queue, for_log(r.job or "?", 255),
            r.failed_at.strftime("%Y-%m-%d %H:%M:%S"),
            for_log(r.exception[:4096].split("\n", 1)[0], EXCEPTION_WIDTH),
        ) for r in rows]
        widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
        for row in table:
            cells = (str(cell).ljust(width) for cell, width in zip(row, widths))
            self.stdout.write("  ".join(cells).rstrip())
