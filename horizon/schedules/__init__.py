"""Scheduled jobs: declare with ``@schedule``; ``manage.py horizon`` fires them."""
from horizon.schedules.definitions import (
    ScheduleDefinition,
    ScheduleError,
    all_schedules,
    schedule,
)

__all__ = ["ScheduleDefinition", "ScheduleError", "all_schedules", "schedule"]
