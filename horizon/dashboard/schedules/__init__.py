"""The Schedules page: each schedule's next run, last run and history."""
