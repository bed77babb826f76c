from horizon.management.commands._control import SupervisorCommand


class Command(SupervisorCommand):
    help = "Pause the workers of one supervisor."
    command = "pause_supervisor"
    done = "Sent pause to the supervisor"
