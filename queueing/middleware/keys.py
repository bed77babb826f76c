"""The Redis keys of job controls (queueing/middleware, queueing/dispatching/unique.py,
and the failover router's locks and debounce: queueing/failover/).

Each key carries its own hash tag around the whole user-given part, so a script that
touches one limiter or lock stays in one cluster slot, and limiters spread over the
cluster. User text is cleaned so it can never open or close a hash tag of its own.
They live with the middleware, above the drivers: no driver reads them."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from queueing.drivers.state_store import QueueKeys
from queueing.settings.namespace import namespaced

CONTROL_KEY_MAX = 200  # characters of a user key kept as given; longer ones get a digest
LOCK_KINDS = ("unique", "overlap")  # the controls whose keys are owned locks


_KEY_ESCAPES = str.maketrans({"%": "%25", "{": "%7B", "}": "%7D"})
_KEY_UNESCAPE = re.compile(r"%(25|7B|7D)")
_UNESCAPED = {"25": "%", "7B": "{", "7D": "}"}


def control_prefix() -> str:
    """``queueing:``, inside the app's namespace (queueing/settings/namespace.py)."""
    return namespaced("queueing:")


def clean_key(key: object) -> str:
    """A user key as text safe inside a hash tag: braces (and '%') percent-escaped, so
    no two keys share a name ('x{1}' and 'x(1)' did when braces became parentheses);
    long ones digested."""
    text = str(key).translate(_KEY_ESCAPES)
    if len(text) > CONTROL_KEY_MAX:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        text = f"{text[:CONTROL_KEY_MAX - 41]}~{digest}"
    return text


def control_key(kind: str, key: object) -> str:
    """``queueing:<kind>:{<key>}``: one rate window, overlap lock, throttle counter..."""
    return f"{control_prefix()}{kind}:{{{clean_key(key)}}}"


def unique_key(job_name: str, unique_id: object) -> str:
    """The lock of one unique job id: the job's name and the id, in one slot."""
    return control_key("unique", f"{job_name}:{unique_id}")


def outcomes_key(job_uuid: str) -> str:
    """Hash of what middleware did to one job (released 3 times by RateLimited...)."""
    return control_key("outcomes", job_uuid)


def debounce_key(queue: QueueKeys, job_name: str, debounce_id: str) -> str:
    """A debounced burst's latest entry: in the queue's hash tag, so the debounce script
    touches one slot with the queue's delayed set."""
    return f"{queue.ready}:debounce:{clean_key(job_name)}:{clean_key(debounce_id)}"


def parse_lock(key: str) -> tuple[str, str] | None:
    """(kind, user key) of a lock key, or None for any other key."""
    prefix = control_prefix()
    for kind in LOCK_KINDS:
        head = f"{prefix}{kind}:{{"
        if key.startswith(head) and key.endswith("}"):
            return kind, _KEY_UNESCAPE.sub(lambda m: _UNESCAPED[m.group(1)],
                                           key[len(head):-1])
    return None


def lock_of(data: Any) -> str | None:
    """The unique lock a payload (dict or Payload) names, if it is one of ours: what
    settling a unique job releases, and what the failover drain moves with the job."""
    data = getattr(data, "data", data)
    spec = data.get("unique") if isinstance(data, dict) else None
    key = spec.get("key") if isinstance(spec, dict) else None
    if isinstance(key, str) and key.startswith(f"{control_prefix()}unique:{{") and \
            len(key) < 400:
        return key
    return None
