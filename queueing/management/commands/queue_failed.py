"""List failed jobs, newest first (masked, one line each: see queueing/observability/redaction.py);
--traceback adds each one's whole exception and traceback (masked too), so an operator
on a host without the dashboard can read why a job failed."""
from queueing.management.base import ProductCommand
from queueing.observability.redaction import escape_control, for_log, mask_text
from queueing.state import failed

EXCEPTION_WIDTH = 80


class Command(ProductCommand):
    help = "List failed jobs, newest first."

    def add_arguments(self, parser):
        parser.add_argument("--queue", default=None)
        parser.add_argument("--limit", type=int, default=100)

    def add_base_argument(self, parser, *args, **kwargs):
        """Django's own --traceback (raise on CommandError) is this command's "print each
        job's traceback": this command raises no CommandError, so the flag is free."""
        if "--traceback" in args:
            kwargs["help"] = "Print each failed job's exception and traceback (masked)."
        super().add_base_argument(parser, *args, **kwargs)

    def handle(self, *args, queue, limit, **options):
        show_traceback = options.get("traceback", False)
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
        if show_traceback:
            for r in rows:
                self.stdout.write(f"\n== {for_log(r.uuid, 100)}  {for_log(r.job or '?', 255)}")
                self.stdout.write(escape_control(mask_text(r.exception), keep_newlines=True)
                                  .rstrip())
