"""The no-op task of the django-tasks-db comparison (bench/database.py)."""
from django_tasks import task


@task()
def noop_task(n=0):
    return None
