"""Shared by the horizon_* control commands: reach Redis, check names, send to every master."""
import redis
from django.core.management.base import BaseCommand, CommandError

from horizon.repositories import commands, state

EXIT_UNREACHABLE = 3  # Redis cannot be reached (horizon_status: 0 running, 1 paused, 2 inactive)


def reachable_client() -> redis.Redis:
    """Horizon's Redis client, or CommandError (exit 3) saying where it failed to connect."""
    from queueing.connections import redis_driver, redis_location

    from horizon.config import horizon_config

    driver = redis_driver(horizon_config().connection)
    try:
        driver.client.ping()
    except redis.RedisError as exc:
        raise CommandError(
            f"cannot reach Redis for connection {driver.name!r} "
            f"({redis_location(driver.config)}): {exc}", returncode=EXIT_UNREACHABLE) from exc
    return driver.client


class ControlCommand(BaseCommand):
    command = ""
    done = ""

    def send(self, **args) -> list[str]:
        names = commands.broadcast(reachable_client(), self.command, **args)
        if not names:
            raise CommandError("no Horizon master is running")
        self.stdout.write(self.style.SUCCESS(f"{self.done} ({', '.join(names)})."))
        return names

    def handle(self, *args, **options):
        self.send()


class SupervisorCommand(ControlCommand):
    """A control command for one supervisor, named on the command line."""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("name", help="A supervisor of a running master (see the "
                                         "dashboard's Workers page).")

    def handle(self, *args, name, **options):
        running = sorted({s.name for s in state.supervisors(reachable_client())})
        if not running:
            raise CommandError("no Horizon master is running")
        if name not in running:
            raise CommandError(f"unknown supervisor {name!r}; running supervisors: "
                               f"{', '.join(running)}")
        self.send(name=name)
