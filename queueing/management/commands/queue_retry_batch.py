"""Retry the failed jobs of one batch (queueing/batches/retry.py)."""
from django.core.management.base import CommandError

from queueing.batches.record import BatchError
from queueing.batches.retry import retry_batch
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited


class Command(ProductCommand):
    help = "Retry every failed job of a batch; the batch counts them as pending again."

    def add_arguments(self, parser):
        parser.add_argument("batch_id")
        parser.add_argument("--connection", default=None)

    def handle(self, *args, batch_id, connection, **options):
        try:
            retried = retry_batch(batch_id, connection)
        except BatchError as exc:
            raise CommandError(str(exc)) from None
        audited("retry batch", batch_id, f"{retried} failed job(s)")
        self.stdout.write(self.style.SUCCESS(
            f"Batch {batch_id}: {retried} failed job(s) pushed again."))
