"""Whether settings.TASKS uses our backend (then installed apps' tasks modules are imported).

Kept free of any Tasks-framework import, so the queue runs on Django 5.2 without the
backport installed.
"""
from __future__ import annotations

from django.conf import settings

BACKEND_PATHS = ("queueing.tasks.RedisBackend", "queueing.tasks.backend.RedisBackend")


def uses_redis_backend() -> bool:
    tasks = getattr(settings, "TASKS", None) or {}
    return isinstance(tasks, dict) and any(
        isinstance(block, dict) and block.get("BACKEND") in BACKEND_PATHS
        for block in tasks.values())
