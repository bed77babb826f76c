"""Forget old batch records (queueing/batches/prune.py)."""
from queueing.batches.prune import prune
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "Delete batch records that finished more than --hours ago (and unfinished " \
           "ones created more than --unfinished hours ago, when given)."

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=float, default=24.0,
                            help="Prune batches finished this many hours ago (default 24).")
        parser.add_argument("--unfinished", type=float, default=None,
                            help="Also prune unfinished batches older than this (hours).")

    def handle(self, *args, hours, unfinished, **options):
        deleted = prune(hours, unfinished)
        self.stdout.write(self.style.SUCCESS(f"Pruned {deleted} batch record(s)."))
