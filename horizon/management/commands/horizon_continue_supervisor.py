from horizon.management.commands._control import SupervisorCommand


class Command(SupervisorCommand):
    help = "Continue the workers of one supervisor."
    command = "continue_supervisor"
    done = "Sent continue to the supervisor"
