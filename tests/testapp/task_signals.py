"""Record Django Tasks signals (in whichever process sends them) in Redis, for the tests.
``task_finished`` also records the fraction of the task's kept (last) progress report at
that moment, None when none is kept yet: what a reader of the stored result can see."""
import json
import os

from queueing.connections import redis_driver
from queueing.state.job_progress import kept_reports

SIGNALS = "test:task-signals"


def connect() -> None:
    from queueing.tasks.framework import PRIMARY

    for name in ("task_enqueued", "task_started", "task_finished"):
        getattr(PRIMARY, name).connect(_recorder(name), weak=False,
                                       dispatch_uid=f"tests.record.{name}")


def _recorder(name):
    def record(sender, task_result, **kwargs):
        driver = redis_driver("redis")
        note = {"signal": name, "sender": f"{sender.__module__}.{sender.__qualname__}",
                "id": task_result.id, "status": str(task_result.status), "pid": os.getpid(),
                "worker_ids": list(task_result.worker_ids)}
        if name == "task_finished":
            kept = kept_reports(driver.heartbeat_store(), [task_result.id]).get(task_result.id)
            note["kept_progress"] = None if kept is None else kept.fraction
        driver.client.rpush(SIGNALS, json.dumps(note))
    return record


def recorded() -> list[dict]:
    return [json.loads(x) for x in redis_driver("redis").client.lrange(SIGNALS, 0, -1)]
