"""Tell every worker to exit after its current job (run after a deploy)."""
import time

from django.core.management.base import BaseCommand, CommandError

from queueing import connections, restart
from queueing.conf import queue_settings


class Command(BaseCommand):
    help = "Ask every worker to stop after its current job; the supervisor or systemd restarts it."

    def handle(self, *args, **options):
        seen = set()
        stamp = time.time()
        unreachable = []
        for config in queue_settings().connections.values():
            try:
                if config.driver == "database":
                    # Its workers read the stamp from the connection's own database.
                    driver = connections.driver(config.name)
                    if driver.alias not in seen:
                        seen.add(driver.alias)
                        driver.broadcast_restart(stamp)
                    continue
                if config.driver != "redis":
                    continue
                location = connections.redis_url(config)  # one broadcast per server
                if location in seen:
                    continue
                seen.add(location)
                restart.broadcast(connections.redis_driver(config.name).client, stamp)
            except Exception as exc:  # one unreachable connection must not hide the others
                unreachable.append(f"{config.name}: {type(exc).__name__}: {exc}")
        if unreachable:
            raise CommandError("could not broadcast the restart on " + "; ".join(unreachable))
        self.stdout.write(self.style.SUCCESS("Broadcast a restart signal to all workers."))
