"""Celery's and RQ's spellings, told in ours (issue 50): a team moving over writes
``@job(retries=3)`` or ``class Send(Job): max_retries = 3`` from habit, and the message
names what to write instead. Pure; read by entries/options.py (an unknown option), by
dispatching/jobs.py (a Job class's attributes) and by entries/limits.py (an argument JSON
cannot carry). docs/migrating.md has the whole table.
"""
from __future__ import annotations

import datetime as dt
import decimal
import difflib
import uuid
from collections.abc import Iterable
from typing import Any

# A Celery or RQ option or task attribute -> how to say it here.
THEIRS = {
    "retries": "tries=N (every run counts: Celery's retries=N is tries=N+1)",
    "max_retries": "tries=N (every run counts: Celery's max_retries=N is tries=N+1)",
    "retry": "tries=N and backoff=[seconds, ...] (RQ's Retry(max, interval))",
    "autoretry_for": "tries=N: any exception is retried until tries are spent",
    "default_retry_delay": "backoff=seconds",
    "retry_backoff": "backoff=[10, 60, 300] (seconds before each retry)",
    "countdown": "delay=seconds (.using(delay=...) or apply_async(countdown=...))",
    "eta": "delay=datetime",
    "time_limit": "timeout=seconds",
    "soft_time_limit": "timeout=seconds",
    "job_timeout": "timeout=seconds",
    "result_ttl": "keep_result=seconds",
    "ignore_result": "keep_result (results are kept only when asked for)",
    "ttl": "expires=seconds (not started by then: never run)",
    "failure_ttl": "HORIZON['trim']['failed'] (minutes the failed store keeps a failure)",
    "rate_limit": "middleware=[RateLimited(...)] (README, Middleware)",
    "bind": "current_job() inside the job (attempts, uuid, release())",
    "acks_late": "nothing: a job is acknowledged after it ran, always",
    "serializer": "nothing: payloads are JSON, always",
    "priority": "apply_async(priority=0..9) for one dispatch (Celery's Redis order: 0 "
                "first, 9 last; docs/migrating.md#priority)",
    "routing_key": "queue=",
}


def unknown_option(key: str, valid: Iterable[str]) -> str:
    """The message for an unknown job option `key`: Celery's or RQ's name for it told in
    ours, else the valid option nearest to it."""
    valid = sorted(valid)
    theirs = THEIRS.get(key)
    if theirs is not None:
        return f"unknown job option {key!r}: that is Celery's or RQ's; here write {theirs}"
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    guess = f" (did you mean {near[0]!r}?)" if near else ""
    return f"unknown job option {key!r}{guess}; valid options: {', '.join(valid)}"


def class_problems(name: str, attributes: Iterable[str], has_handle: bool) -> list[str]:
    """Why a Job subclass would not run as its author expects: a Celery or RQ attribute
    that nothing here reads, or no ``handle`` method (Celery's is ``run``)."""
    problems = [f"{name}.{attr} is Celery's or RQ's; here write {THEIRS[attr]}"
                for attr in attributes if attr in THEIRS]
    if not has_handle:
        problems.append(f"{name} has no handle() method: define def handle(self, ...) "
                        "with the job's code (Celery's run() is handle() here)")
    return problems


def argument_hint(value: Any) -> str:
    """A hint for an argument JSON cannot carry ('' when there is none to give)."""
    if hasattr(value, "_meta") and hasattr(value, "pk"):
        return f"; pass its primary key instead (pk={value.pk!r})"
    if isinstance(value, decimal.Decimal):
        return "; pass str(value) and rebuild it with Decimal(text) in the job"
    if isinstance(value, uuid.UUID):
        return "; pass str(value) and rebuild it with UUID(text) in the job"
    if isinstance(value, (dt.datetime, dt.date, dt.time)) or hasattr(value, "isoformat"):
        return "; pass value.isoformat() and parse it in the job"
    if isinstance(value, (set, frozenset)):
        return "; pass a list (sorted(value)) and rebuild the set in the job"
    if isinstance(value, bytes):
        return "; pass text (value.decode()) or base64 of it"
    return ""
