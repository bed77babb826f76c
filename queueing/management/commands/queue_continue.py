"""Continue a paused queue."""
from queueing.management.commands.queue_pause import Command as PauseCommand


class Command(PauseCommand):
    help = "Continue a paused queue."
    pausing = False
