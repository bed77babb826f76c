"""Pause one queue: every worker skips it (within a second) while others keep running."""
from django.core.management.base import CommandError

from queueing import connections
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited


class Command(ProductCommand):
    help = "Pause a queue: workers stop taking its jobs until queue_continue."
    pausing = True

    def add_arguments(self, parser):
        parser.add_argument("queue")
        parser.add_argument("--connection", default=None)

    def handle(self, *args, queue, connection, **options):
        try:
            driver = connections.queue_driver(connection)
            queue = driver.config.check_queue(queue)
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        audited_after = ("pause queue" if self.pausing else "continue queue",
                         f"{driver.name}:{queue}")
        if self.pausing:
            driver.pause(queue)
            self.stdout.write(self.style.SUCCESS(f"Paused {driver.name}:{queue}."))
        else:
            driver.resume(queue)
            self.stdout.write(self.style.SUCCESS(f"Continued {driver.name}:{queue}."))
        audited(*audited_after)
