"""manage.py horizon_schedule: every schedule with its next runs, last run and state."""
import datetime as dt
import time

from django.core.management.base import CommandError

from horizon.repositories import horizon_client
from horizon.schedules import store
from horizon.schedules.definitions import ScheduleError, all_schedules
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "List scheduled jobs with their next runs (fired by manage.py horizon)."

    def add_arguments(self, parser):
        parser.add_argument("--next", type=int, default=3, help="next runs shown per schedule")

    def handle(self, *args, **options):
        try:
            schedules = all_schedules()
        except ScheduleError as exc:
            raise CommandError(str(exc)) from exc
        if not schedules:
            self.stdout.write("No schedules. Declare one with @schedule or HORIZON['schedule'].")
            return
        paused = store.paused_names(horizon_client())
        now = time.time()
        for schedule in schedules:
            upcoming, at = [], now
            for _ in range(max(options["next"], 1)):
                at = schedule.next_after(at)
                upcoming.append(dt.datetime.fromtimestamp(at, dt.UTC)
                                .strftime("%Y-%m-%d %H:%M:%S"))
            runs = store.history(schedule, 1)
            last = (dt.datetime.fromtimestamp(runs[0]["at"], dt.UTC)
                    .strftime("%Y-%m-%d %H:%M:%S") + f" ({runs[0]['trigger']})"
                    if runs else "never")
            state = "PAUSED" if schedule.name in paused else "active"
            self.stdout.write(f"{schedule.name}  [{state}]  {schedule.every}  -> {schedule.job}")
            self.stdout.write(f"    next (UTC): {', '.join(upcoming)}")
            self.stdout.write(f"    last run:   {last}")
