"""Asking before a command deletes what cannot be brought back (queue_clear, queue_flush).

Without a terminal (cron, CI, `ssh host cmd`, stdin at /dev/null) `input()` raised a bare
EOFError traceback; now the command stops with an error that says to pass --force.
"""
from __future__ import annotations

from django.core.management.base import CommandError


def confirmed(question: str, *, force: bool) -> bool:
    """True when `force` is set or the operator answers yes; False on any other answer.
    CommandError when there is nobody to ask (stdin closed or at its end)."""
    if force:
        return True
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        raise CommandError(
            f"{question} Nothing was deleted: there is no terminal to answer on. "
            "Pass --force to delete without asking.") from None
    return answer.strip().lower() in ("y", "yes")
