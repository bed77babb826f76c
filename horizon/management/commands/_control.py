"""Shared by the horizon_* control commands: send one command to every live master."""
from django.core.management.base import BaseCommand, CommandError

from horizon.repositories import commands, horizon_client


class ControlCommand(BaseCommand):
    command = ""
    done = ""

    def send(self, **args) -> list[str]:
        names = commands.broadcast(horizon_client(), self.command, **args)
        if not names:
            raise CommandError("no Horizon master is running")
        self.stdout.write(self.style.SUCCESS(f"{self.done} ({', '.join(names)})."))
        return names

    def handle(self, *args, **options):
        self.send()
