"""Counts and the oldest ready job's age per queue; exit 1 past a threshold (for cron)."""
import json
import sys

from django.core.management.base import CommandError

from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.state import monitoring

EXIT_BUSY = 1  # a queue holds more than --max jobs


class Command(ProductCommand):
    help = ("Show ready, delayed and reserved counts and the oldest ready job's wait per "
            "queue; with --max N, exit 1 and send queue_busy when a queue holds more "
            "than N jobs.")

    def add_arguments(self, parser):
        parser.add_argument("queues", nargs="*", metavar="connection:queue",
                            help="queues to read ('queue' alone: the default connection); "
                                 "default: every queue of every connection")
        parser.add_argument("--max", type=int, default=None, metavar="N", dest="most",
                            help="exit 1 when any queue holds more than N jobs")
        parser.add_argument("--json", action="store_true", help="one JSON object")

    def handle(self, *args, queues, most, json: bool, **options):
        if most is not None and most < 0:
            raise CommandError("--max must be 0 or more")
        try:
            readings = monitoring.read(monitoring.targets(queues))
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        busy = monitoring.over(readings, most) if most is not None else []
        if json:
            self.stdout.write(_json({"queues": [r.as_dict() for r in readings],
                                     "max": most, "busy": [f"{r.connection}:{r.queue}"
                                                          for r in busy]}))
        else:
            self._table(readings, busy)
        if busy:
            monitoring.announce_busy(busy, most)
            sys.exit(EXIT_BUSY)

    def _table(self, readings, busy) -> None:
        over = {(r.connection, r.queue) for r in busy}
        self.stdout.write(f"{'Queue':<28} {'Ready':>9} {'Delayed':>9} {'Reserved':>9} "
                          f"{'Oldest wait':>12}")
        for r in readings:
            flag = "  OVER" if (r.connection, r.queue) in over else ""
            self.stdout.write(f"{r.connection + ':' + r.queue:<28} {r.ready:>9} "
                              f"{r.delayed:>9} {r.reserved:>9} {r.oldest_wait:>11.1f}s{flag}")


def _json(data) -> str:
    return json.dumps(data, sort_keys=True)
