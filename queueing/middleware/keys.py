"""Redis key names of the shared state behind job controls (rate windows, locks, counters).

Each key carries its own hash tag, ``{...}``, around the whole user-given part, so a
script that touches one key (or several keys of one limiter) stays in one Redis Cluster
slot, and different limiters spread over the cluster. User keys are cleaned so they can
never open or close a hash tag of their own, and long ones are shortened to a digest.
"""
from __future__ import annotations

import hashlib

PREFIX = "queueing:"
MAX_KEY = 200  # characters of a user key kept as given; longer ones become a digest
KINDS = ("unique", "overlap", "rate", "throttle")


def clean(key: object) -> str:
    """A user key as text safe inside a hash tag: braces replaced, long ones digested."""
    text = str(key).replace("{", "(").replace("}", ")")
    if len(text) > MAX_KEY:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = f"{text[:MAX_KEY - 41]}~{digest}"
    return text


def state_key(kind: str, key: object) -> str:
    """``queueing:<kind>:{<key>}``: the key of one limiter or lock."""
    return f"{PREFIX}{kind}:{{{clean(key)}}}"


def unique_key(job_name: str, unique_id: object) -> str:
    """The lock of one unique job id: the job's name and the id, one slot."""
    return state_key("unique", f"{job_name}:{unique_id}")


def outcomes_key(job_uuid: str) -> str:
    """Hash of what middleware did to one job (released 3 times by RateLimited...)."""
    return f"{PREFIX}outcomes:{{{clean(job_uuid)}}}"


def lock_pattern(kind: str) -> str:
    """SCAN pattern of every lock of one kind (unique or overlap)."""
    return f"{PREFIX}{kind}:{{*"


def parse_lock(key: str) -> tuple[str, str] | None:
    """(kind, user key) of a lock key, or None for any other key."""
    for kind in ("unique", "overlap"):
        head = f"{PREFIX}{kind}:{{"
        if key.startswith(head) and key.endswith("}"):
            return kind, key[len(head):-1]
    return None
