from horizon.management.commands._control import ControlCommand


class Command(ControlCommand):
    help = "Continue every paused Horizon worker."
    command = "continue"
    done = "Sent continue to Horizon"
