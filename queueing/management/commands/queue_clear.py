"""Drop the pending (ready and delayed) jobs of a queue."""
from django.core.management.base import CommandError

from queueing import connections
from queueing.dispatching import unique
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.management.confirm import confirmed


class Command(ProductCommand):
    help = "Delete all pending and delayed jobs of a queue (running jobs are left alone)."

    def add_arguments(self, parser):
        parser.add_argument("connection", nargs="?", default=None)
        parser.add_argument("--queue", default=None)
        parser.add_argument("--force", action="store_true", help="Do not ask for confirmation.")

    def handle(self, *args, connection, queue, force, **options):
        try:
            driver = connections.queue_driver(connection)
            queue = driver.config.check_queue(driver.config.queue if queue is None else queue)
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        if not confirmed(f"Delete every pending job of {driver.name}:{queue}?", force=force):
            self.stdout.write("Nothing deleted.")
            return
        locked = unique.waiting_locks(driver, queue)  # unique jobs' locks go with them
        count = driver.clear(queue)
        unique.release_cleared(driver, queue, locked)
        audited("clear queue", f"{driver.name}:{queue}", f"{count} pending jobs deleted")
        self.stdout.write(self.style.SUCCESS(f"Cleared {count} job(s) from {driver.name}:{queue}."))
