"""Tell every worker to exit after its current job (run after a deploy)."""
import time

from django.core.management.base import BaseCommand

from queueing import connections, restart
from queueing.conf import queue_settings


class Command(BaseCommand):
    help = "Ask every worker to stop after its current job; the supervisor or systemd restarts it."

    def handle(self, *args, **options):
        seen = set()
        stamp = None
        for config in queue_settings().connections.values():
            if config.driver == "database":
                stamp = stamp or time.time()
                connections.driver(config.name).broadcast_restart(stamp)
                continue
            if config.driver != "redis":
                continue
            client = connections.redis_driver(config.name).client
            location = repr(client.connection_pool.connection_kwargs)
            if location in seen:
                continue
            seen.add(location)
            stamp = restart.broadcast(client, stamp)
        self.stdout.write(self.style.SUCCESS("Broadcast a restart signal to all workers."))
