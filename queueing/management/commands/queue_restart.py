"""Tell every worker to exit after its current job (run after a deploy)."""
from django.core.management.base import BaseCommand

from queueing import connections, restart
from queueing.conf import queue_settings


class Command(BaseCommand):
    help = "Ask every worker to stop after its current job; the supervisor or systemd restarts it."

    def handle(self, *args, **options):
        seen = set()
        for config in queue_settings().connections.values():
            if config.driver != "redis":
                continue
            location = connections.redis_url(config)  # one broadcast per server
            if location in seen:
                continue
            seen.add(location)
            restart.broadcast(connections.redis_driver(config.name).client)
        self.stdout.write(self.style.SUCCESS("Broadcast a restart signal to all workers."))
