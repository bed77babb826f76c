"""Record Django Tasks signals (in whichever process sends them) in Redis, for the tests."""
import json
import os

from queueing.connections import redis_driver

SIGNALS = "test:task-signals"


def connect() -> None:
    from queueing.tasks.framework import PRIMARY

    for name in ("task_enqueued", "task_started", "task_finished"):
        getattr(PRIMARY, name).connect(_recorder(name), weak=False,
                                       dispatch_uid=f"tests.record.{name}")


def _recorder(name):
    def record(sender, task_result, **kwargs):
        redis_driver("redis").client.rpush(SIGNALS, json.dumps({
            "signal": name, "sender": f"{sender.__module__}.{sender.__qualname__}",
            "id": task_result.id, "status": str(task_result.status), "pid": os.getpid(),
            "worker_ids": list(task_result.worker_ids)}))
    return record


def recorded() -> list[dict]:
    return [json.loads(x) for x in redis_driver("redis").client.lrange(SIGNALS, 0, -1)]
