"""Cancel a running job: the worker stops it and records it as failed (not retried)."""
from django.core.management.base import CommandError

from queueing import connections
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited, cli_actor
from queueing.state.cancel import cancel_running


class Command(ProductCommand):
    help = ("Cancel a running job by uuid: it is stopped, recorded in the failed store as "
            "cancelled (not retried; queue_retry runs it again), and the command reports a "
            "job that did not stop within the wait.")

    def add_arguments(self, parser):
        parser.add_argument("uuid")
        parser.add_argument("--connection", default=None)
        parser.add_argument("--queue", default=None,
                            help="Comma-separated queues to look in (default: the "
                                 "connection's queues).")
        parser.add_argument("--reason", default="")
        parser.add_argument("--wait", type=float, default=6.0,
                            help="Seconds to wait for the job to stop (default 6).")

    def handle(self, *args, uuid, connection, queue, reason, wait, **options):
        try:
            driver = connections.queue_driver(connection)
            config = driver.config
            names = queue.split(",") if queue else list(config.queues or (config.queue,))
            queues = [config.check_queue(name.strip()) for name in names if name.strip()]
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        result = cancel_running(driver.name, uuid, queues, by=cli_actor(), reason=reason,
                                wait=wait)
        if result.state in ("cancelled", "stuck"):  # the request was sent (and stays)
            audited("cancel", uuid, f"running on {driver.name}:{result.queue}"
                    + (f": {reason}" if reason else ""))
        if result.state == "cancelled":
            self.stdout.write(self.style.SUCCESS(
                f"Cancelled job {uuid} on {driver.name}:{result.queue} "
                f"({result.waited:.1f}s); it is in the failed store, not retried."))
        elif result.state == "finished":
            self.stdout.write(f"Job {uuid} finished before the cancel reached it.")
        elif result.state == "invalid":
            raise CommandError(f"{uuid!r} is not a job id (give one job's exact uuid)")
        elif result.state == "not-running":
            raise CommandError(f"job {uuid} is not running on {driver.name} "
                               f"({', '.join(queues)})")
        else:
            raise CommandError(
                f"job {uuid} is still running {result.waited:.0f}s after the cancel: it "
                "ignores interrupts (stuck in C code?); the request stays, and the job "
                "stops at its timeout (the worker's sidecar kills it past the grace)")
