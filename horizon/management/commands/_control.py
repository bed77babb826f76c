"""Shared by the horizon_* control commands: reach Redis, check names, send one command to
every live master, or with ``--master NAME`` (repeatable) only to the named ones (one host
of many)."""
import redis
from django.core.management.base import CommandError

from horizon.configuration.settings import horizon_settings
from horizon.repositories import commands, state
from queueing.connections import redis_client, redis_driver
from queueing.drivers.state_store import RedisClient
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited
from queueing.observability.redaction import mask_text

EXIT_UNREACHABLE = 3  # Redis cannot be reached (horizon_status: 0 running, 1 paused, 2 inactive)


def reachable_client() -> RedisClient:
    """Horizon's Redis client, or CommandError (exit 3) saying where it failed to connect."""

    driver = redis_driver(horizon_settings().connection)
    client = redis_client(driver.name)
    try:
        driver.ping()
    except redis.RedisError as exc:
        raise unreachable(exc) from exc
    return client


def unreachable(exc: BaseException) -> CommandError:
    """One line, no traceback, exit 3: where Horizon's Redis is (password masked) and
    what redis-py said."""
    where = redis_driver(horizon_settings().connection).location()
    detail = mask_text((str(exc).strip().splitlines() or [type(exc).__name__])[0])
    return CommandError(f"cannot reach {where}: {detail}", returncode=EXIT_UNREACHABLE)


class ControlCommand(ProductCommand):
    command = ""
    done = ""

    def add_arguments(self, parser):
        parser.add_argument(
            "--master", action="append", default=[], metavar="NAME", dest="masters",
            help="only this master (its HORIZON_NAME or hostname); repeat for several; "
                 "default: every running master")

    def send(self, masters: list[str] | None = None, **args) -> list[str]:
        client = reachable_client()
        if masters:
            running = {m.name for m in state.masters(client)}
            unknown = [name for name in masters if name not in running]
            if unknown:
                raise CommandError(
                    f"no running master named {', '.join(unknown)}; running: "
                    f"{', '.join(sorted(running)) or '(none)'}")
            names = list(dict.fromkeys(masters))
            for name in names:
                commands.push(client, name, self.command, **args)
        else:
            names = commands.broadcast(client, self.command, **args)
        if not names:
            raise CommandError("no Horizon master is running")
        self.audit(names, masters, args)
        self.stdout.write(self.style.SUCCESS(f"{self.done} ({', '.join(names)})."))
        return names

    def audit(self, names: list[str], masters: list[str] | None, args: dict) -> None:
        """One audit entry in the dashboard's words: "pause all" for every master,
        "pause master" for each one named, "pause supervisor" for a supervisor."""
        verb = self.command.removesuffix("_supervisor")
        if "name" in args:
            audited(f"{verb} supervisor", args["name"], ", ".join(names))
        elif masters:
            for name in names:
                audited(f"{verb} master", name)
        else:
            audited(f"{verb} all", ", ".join(names))

    def handle(self, *args, masters, **options):
        self.send(masters)


class SupervisorCommand(ControlCommand):
    """A control command for one supervisor, named on the command line."""

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("name", help="A supervisor of a running master (see the "
                                         "dashboard's Workers page).")

    def handle(self, *args, masters, **options):
        name = options["name"]
        found = state.supervisors(reachable_client())
        if masters:
            found = [s for s in found if s.master in masters]
        running = sorted({s.name for s in found})
        if not running:
            raise CommandError("no Horizon master is running" + (
                f" under {', '.join(masters)}" if masters else ""))
        if name not in running:
            raise CommandError(f"unknown supervisor {name!r}; running supervisors: "
                               f"{', '.join(running)}")
        self.send(masters, name=name)
