"""What the worker's loops treat as a lost connection (reconnect and go on) and as a
refusal (Redis answered but said no: wait and try again)."""
from __future__ import annotations

import redis
from django.db import InterfaceError, OperationalError

from queueing.drivers.redis.cluster import TRANSIENT_ERRORS

# Redis or a cluster failing over/resharding, or the database of a database connection away.
CONNECTION_ERRORS = (*TRANSIENT_ERRORS, OperationalError, InterfaceError)
# Out of memory under noeviction, a key of the wrong type...
REFUSALS = (redis.ResponseError,)
