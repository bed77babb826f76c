"""Pending, delayed and reserved counts per queue."""
from django.core.management.base import CommandError

from queueing import connections
from queueing.errors import QueueError
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "Show pending, delayed and reserved counts per queue."

    def add_arguments(self, parser):
        parser.add_argument("connection", nargs="?", default=None)
        parser.add_argument("--queue", default=None, help="Comma-separated queue names.")

    def handle(self, *args, connection, queue, **options):
        try:
            driver = connections.queue_driver(connection)
            if queue is not None:
                names = [driver.config.check_queue(q.strip()) for q in queue.split(",")]
            else:
                names = list(driver.config.queues or [driver.config.queue])
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        sizes = driver.sizes_many(names)
        self.stdout.write(f"{'Queue':<20} {'Pending':>9} {'Delayed':>9} {'Reserved':>9}")
        for name, size in sizes.items():
            self.stdout.write(f"{name:<20} {size.pending:>9} {size.delayed:>9} {size.reserved:>9}")
