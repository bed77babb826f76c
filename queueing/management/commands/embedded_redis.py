"""Start, stop or show the embedded redis-server of a connection without a Redis URL."""
from django.core.management.base import CommandError

from queueing.connections import redacted_url, redis_location
from queueing.contract.registry import kind_of
from queueing.drivers.redis import EmbeddedRedis
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.settings.config import queue_settings


class Command(ProductCommand):
    help = "Start (idempotent), stop or show the embedded Redis server used when no URL is set."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["start", "stop", "status"])
        parser.add_argument("--connection", default=None,
                            help="Queue connection (default: QUEUE['default']).")

    def handle(self, *args, action, connection, **options):
        try:
            config = queue_settings().connection(connection)
        except QueueError as exc:
            raise CommandError(str(exc)) from exc
        if not kind_of(config).redis:
            raise CommandError(f"connection {config.name!r} is not a redis connection")
        if config.url or config.sentinel:
            where = redacted_url(config.url) if config.url else redis_location(config)
            self.stdout.write(f"connection {config.name!r} uses {where}; nothing to do")
            return
        # the settings refuse a redis connection with neither a url nor an embedded_dir
        assert config.embedded_dir is not None
        server = EmbeddedRedis(config.embedded_dir)
        if action == "start":
            try:
                url = server.ensure_running()
            except QueueError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"redis-server running at {redacted_url(url)} (pid {server.pid()})")
        elif action == "stop":
            server.stop()
            self.stdout.write("redis-server stopped")
        else:
            running = server.is_running()
            state = "running" if running else "stopped"
            self.stdout.write(f"redis-server at {redacted_url(server.url)}: {state}")
            if not running:
                raise SystemExit(1)
