"""The debounce script call: schedule a burst's latest entry on a queue's Redis.

Both a debounced dispatch (queueing/dispatching/unique.py) and a failover router whose
first connection answers (queueing/failover/driver.py) make it, so it lives here with
the script and its key, below both: the router never imports dispatching.
"""
from __future__ import annotations

from queueing.drivers.state_store import QueueKeys, RedisClient
from queueing.middleware.keys import debounce_key
from queueing.middleware.store import script


def debounce_on_redis(client: RedisClient, prefix: str, queue: str, job_name: str,
                      lock_id: str, text: str, due: float, remember_ms: int) -> None:
    """Schedule `text` for `due`, replacing the burst's entry still delayed (one script
    on the queue's slot)."""
    keys = QueueKeys.for_queue(queue, prefix)
    script(client, "debounce")(keys=[keys.delayed, debounce_key(keys, job_name, lock_id)],
                               args=[due, text, remember_ms])
