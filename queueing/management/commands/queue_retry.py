"""Push failed jobs back onto their queues with attempts reset."""
from django.core.management.base import CommandError

from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.models import FailedJob
from queueing.state import failed


class Command(ProductCommand):
    help = "Retry failed jobs: queue_retry UUID [UUID ...] | queue_retry all [--queue=NAME]"

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="+", help="Failed job uuids, or 'all'.")
        parser.add_argument("--queue", default=None, help="With 'all': only this queue.")

    def handle(self, *args, ids, queue, **options):
        if ids == ["all"]:
            rows = list(failed.matching(queue=queue))
        else:
            if queue:
                raise CommandError("--queue only goes with 'all'")
            rows = list(FailedJob.objects.filter(uuid__in=ids))
            missing = set(ids) - {r.uuid for r in rows}
            if missing:
                raise CommandError(f"no failed job with uuid: {', '.join(sorted(missing))}")
        for row in rows:
            try:
                failed.retry(row)
            except failed.UniqueJobQueued as exc:  # the row is kept for a later retry
                self.stderr.write(f"Failed job {row.uuid}: {exc}.")
                continue
            audited("retry", row.uuid, f"{row.job} on {row.connection}:{row.queue}")
            self.stdout.write(f"Pushed failed job {row.uuid} back onto {row.queue}.")
        if not rows:
            self.stdout.write("No failed jobs to retry.")
