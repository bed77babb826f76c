"""The app's namespace: one name in front of every Redis key the product writes.

Two projects sharing one Redis database would otherwise share their control keys
(``queueing:paused``, ``queueing:restart``), heartbeats, cancel requests, locks and all of
Horizon's ``{horizon}:*`` state: one project's ``queue_pause`` stopped the other's jobs and
its ``queue_restart`` stopped the other's workers. With ``QUEUE["namespace"] = "shop"``
(or ``QUEUE_NAMESPACE=shop`` in the environment, which wins, so one settings module can
serve several deployments) every key becomes ``shop:<key>``.

The namespace goes in front of the key, never inside its braces, so each key keeps the
hash tag it had and every Lua script still touches one Redis Cluster slot. Braces are
refused in it for the same reason. The default, no namespace, keeps today's key names
exactly, so existing deployments need no migration.

Read once per process (cached; reset when a test overrides settings.QUEUE): a worker and
the master must agree on it for their whole life anyway.

A reader may look at another app's keys: ``with scoped("blog"):`` makes every key built
inside the block (in this thread or task only: a context variable) ``blog:<key>``. The
dashboard does this per request for the app its URL names (horizon/dashboard/apps/), so
one site shows several namespaces on one Redis without mixing them; workers and dispatch
never enter a scope and keep the process's own namespace.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from queueing.errors import ConfigurationError

NAMESPACE_ENV = "QUEUE_NAMESPACE"
NAMESPACE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")  # used with fullmatch; no braces, no ':'


def namespace_error(value: Any, source: str) -> ConfigurationError | None:
    """Why `value` cannot be a namespace (None when it can); `source` names where it came
    from, so the message points at the setting or the variable to fix."""
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not NAMESPACE_NAME.fullmatch(value):
        return ConfigurationError(
            f"{source} must be 1-64 letters, digits, '_', '.' or '-' (no braces, which "
            f"would break Redis Cluster hash tags, and no ':'); got {value!r}")
    return None


def configured(raw: dict[str, Any] | None, environ: Any = os.environ) -> str:
    """The namespace from the environment, else from settings.QUEUE; ConfigurationError
    when it is malformed (a bad namespace must stop the process, never write shared keys)."""
    from_env = environ.get(NAMESPACE_ENV)
    if from_env:
        value: Any = from_env
        source = f"${NAMESPACE_ENV}"
    else:
        value = (raw or {}).get("namespace") or ""
        source = "QUEUE['namespace']"
    problem = namespace_error(value, source)
    if problem is not None:
        raise problem
    return str(value)


# The namespace a block of code reads in (scoped()); None: the process's own. Public so
# a hot path (the drivers' key cache) can read it with one call.
SCOPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("queueing_namespace",
                                                                  default=None)
_scope = SCOPE


@lru_cache(maxsize=1)
def process() -> str:
    """This process's own namespace ('' for none): the setting, whatever the scope."""
    return configured(getattr(settings, "QUEUE", None))


def current() -> str:
    """The namespace keys are built in now: the scope's, else this process's own."""
    space = _scope.get()
    return process() if space is None else space


@contextlib.contextmanager
def scoped(space: str) -> Iterator[None]:
    """Build every key inside the block in namespace `space` ('' for none), in this
    context only. ConfigurationError for a malformed name: a caller validates what it
    was given against its own list first, and this stops the rest."""
    problem = namespace_error(space, "a scoped namespace")
    if problem is not None:
        raise problem
    token = _scope.set(space)
    try:
        yield
    finally:
        _scope.reset(token)


def namespaced(key: str, space: str | None = None) -> str:
    """`key` inside namespace `space` (default: the current one, see current()):
    ``<namespace>:<key>``, or `key` itself."""
    if space is None:
        space = current()
    return f"{space}:{key}" if space else key


@receiver(setting_changed)
def _reset_on_setting_change(*, setting: str, **_: Any) -> None:
    if setting == "QUEUE":
        process.cache_clear()
