from horizon.management.commands._control import ControlCommand


class Command(ControlCommand):
    help = "Pause every Horizon worker (no new jobs are taken; running ones finish)."
    command = "pause"
    done = "Sent pause to Horizon"
