"""Dashboard views (a home page with queue counts for now)."""
from django.shortcuts import render

from queueing import connections
from queueing.conf import queue_settings


def queue_rows() -> list[dict]:
    rows = []
    for config in queue_settings().connections.values():
        if config.driver != "redis" or config.queues is None:
            continue
        sizes = connections.redis_driver(config.name).sizes_many(config.queues)
        for queue, size in sizes.items():
            rows.append({"connection": config.name, "queue": queue, "sizes": size})
    return rows


def home(request):
    return render(request, "horizon/home.html", {"rows": queue_rows()})
