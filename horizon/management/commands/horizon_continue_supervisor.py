from ._control import ControlCommand


class Command(ControlCommand):
    help = "Continue the workers of one supervisor."
    command = "continue_supervisor"
    done = "Sent continue to the supervisor"

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        self.send(name=name)
