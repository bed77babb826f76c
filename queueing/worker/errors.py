"""What the worker treats as the store being away for now (reconnect and go on) and as a
refusal (Redis answered but said no: wait and try again).

One source: each driver declares its own ``transient_errors`` (the contract); a worker
adds Redis's, because job controls, heartbeats and Horizon's recorders live on a Redis
whatever the connection's driver. Every retry and every reconnect in the worker asks
``transient(driver)``."""
from __future__ import annotations

import redis
from django.db import InterfaceError, OperationalError

from queueing.contract.registry import kind_of
from queueing.contract.roles import QueueDriver
from queueing.drivers.state_store import TRANSIENT_ERRORS

# Out of memory under noeviction, a key of the wrong type...
REFUSALS = (redis.ResponseError,)


def transient(driver: QueueDriver) -> tuple[type[Exception], ...]:
    """The errors that mean "the store is away for now" for a worker on `driver`."""
    return tuple(dict.fromkeys((*driver.transient_errors, *TRANSIENT_ERRORS)))


def store_name(driver: QueueDriver) -> str:
    """How messages name the driver's store ("Redis", "the database")."""
    return kind_of(driver.config).store


def every_transient_error() -> tuple[type[Exception], ...]:
    """The transient errors of every kind's store: what a wait for a store not reached
    yet rides out (startup.wait_for_store)."""
    return (*TRANSIENT_ERRORS, OperationalError, InterfaceError)
