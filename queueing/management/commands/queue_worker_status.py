"""Liveness and readiness of the workers on one host (a pod's probe): thin over
queueing/worker/health.py; exit codes in queueing/observability/probes.py."""
import socket
import sys

import redis
from django.core.management.base import CommandError

from queueing import connections
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.observability import probes
from queueing.worker import health


class Command(ProductCommand):
    help = ("Say whether the workers on this host are alive (their loop makes progress) and "
            "ready (taking jobs). Exit 0 alive and ready, 1 alive but paused, 2 not alive or "
            "none found, 3 Redis unreachable; with --probe liveness a paused worker, and an "
            "unreachable Redis, exit 0.")

    def add_arguments(self, parser):
        parser.add_argument("connection", nargs="?", default=None)
        parser.add_argument("--host", default=None,
                            help="the workers' host name (default: this host's)")
        parser.add_argument("--name", default=None,
                            help="only workers started with this --name")
        parser.add_argument("--probe", choices=probes.PROBES, default=None,
                            help="answer one question with the exit code (see help)")

    def handle(self, *args, connection, host, name, probe, **options):
        try:
            driver = connections.queue_driver(connection)
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        if not driver.capabilities.heartbeats:
            raise CommandError(f"connection {driver.name!r} keeps no worker heartbeats "
                               "(only redis connections do)")
        store = connections.redis_driver(driver.name)
        here = socket.gethostname()
        host = host or here
        try:
            found = health.on_host(store.client, host, name, local=host == here)
        except redis.RedisError as exc:
            self.stdout.write(f"cannot reach {store.location()}: {exc}")
            sys.exit(probes.exit_code(alive=None, ready=False, probe=probe))
        if not found:
            self.stdout.write(f"no worker{f' named {name}' if name else ''} on {host}")
            sys.exit(probes.EXIT_NOT_ALIVE)
        for one in found:
            self.stdout.write(f"worker {one.owner}: {'alive' if one.alive else 'NOT ALIVE'}, "
                              f"{'ready' if one.ready else 'not ready'}: {one.why}")
        code = probes.exit_code(alive=all(w.alive for w in found),
                                ready=all(w.ready for w in found), probe=probe)
        if code:
            sys.exit(code)
