from ._control import ControlCommand


class Command(ControlCommand):
    help = "Pause the workers of one supervisor."
    command = "pause_supervisor"
    done = "Sent pause to the supervisor"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("name")

    def handle(self, *args, name, masters, **options):
        self.send(masters, name=name)
