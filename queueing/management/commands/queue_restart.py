"""Tell every worker to exit after its current job (run after a deploy)."""
import time

from django.core.management.base import CommandError

from queueing import connections
from queueing.contract.registry import kind_of
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.settings.config import queue_settings


class Command(ProductCommand):
    help = "Ask every worker to stop after its current job; the supervisor or systemd restarts it."

    def handle(self, *args, **options):
        seen = set()
        stamp = time.time()
        unreachable = []
        for config in queue_settings().connections.values():
            if not kind_of(config).workers_read:
                continue  # sync and null connections have no workers
            try:
                driver = connections.queue_driver(config.name)
                scope = driver.restart_scope()  # one broadcast per Redis server or database
                if scope in seen:
                    continue
                seen.add(scope)
                driver.broadcast_restart(stamp)
            except Exception as exc:  # one unreachable connection must not hide the others
                unreachable.append(f"{config.name}: {type(exc).__name__}: {exc}")
        if unreachable:
            raise CommandError("could not broadcast the restart on " + "; ".join(unreachable))
        audited("restart workers", "all connections")
        self.stdout.write(self.style.SUCCESS("Broadcast a restart signal to all workers."))
