"""Shared by the horizon_* control commands: send one command to every live master, or
with ``--master NAME`` (repeatable) only to the named ones (one host of many)."""
from django.core.management.base import BaseCommand, CommandError

from horizon.repositories import commands, horizon_client, state


class ControlCommand(BaseCommand):
    command = ""
    done = ""

    def add_arguments(self, parser):
        parser.add_argument(
            "--master", action="append", default=[], metavar="NAME", dest="masters",
            help="only this master (its HORIZON_NAME or hostname); repeat for several; "
                 "default: every running master")

    def send(self, masters: list[str] | None = None, **args) -> list[str]:
        client = horizon_client()
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
        self.stdout.write(self.style.SUCCESS(f"{self.done} ({', '.join(names)})."))
        return names

    def handle(self, *args, masters, **options):
        self.send(masters)
