"""Masters and supervisors as published by `manage.py horizon`, with expiry.

Each is a JSON blob under its own key with a TTL, plus a heartbeat in a sorted set so
readers can list them; a master that stops publishing vanishes within STATE_TTL.
Supervisors are stored under ``master:supervisor`` (their ``key``), so masters on two
hosts running the same HORIZON settings never overwrite each other's supervisors.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from horizon import keys
from queueing.drivers.state_store import RedisClient, as_str

STATE_TTL = 15  # seconds a master/supervisor counts as running without a heartbeat
# Seconds its state is kept. Longer than STATE_TTL (issue 47): a key's expiry runs on
# Redis's clock, which goes on while Redis hangs, so a 20 s outage expired every
# master's state and the overview said "No Horizon master is running", Inactive, and a
# wait of hours (no supervisor, so no capacity) until the next publication. Readers
# judge a heartbeat's age themselves (`fresh`), less the time Redis was away.
KEEP_TTL = 120


@dataclass
class MasterState:
    name: str
    pid: int
    host: str
    status: str  # "running" | "paused"
    started_at: float
    heartbeat: float = 0.0
    environment: str = "production"
    supervisors: list[str] = field(default_factory=list)


@dataclass
class SupervisorState:
    name: str
    master: str
    status: str  # "running" | "paused"
    connection: str
    queues: list[str]
    balance: str
    processes: dict[str, int]  # queue (or "a,b" for balance=off) -> process count
    pids: list[int]
    options: dict[str, Any]
    heartbeat: float = 0.0
    draining: int = 0  # workers asked to stop (scaled down) still finishing their job
    # each worker process: pid, pool, started_at (epoch), memory_mb (None: unreadable),
    # draining (scaled down, finishing its job); the Workers page shows them
    workers: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return supervisor_id(self.master, self.name)

    @property
    def total_processes(self) -> int:
        return sum(self.processes.values())


def supervisor_id(master: str, name: str) -> str:
    """How a supervisor is stored and addressed: unique across masters (hosts)."""
    return f"{master}:{name}"


def _publish(client: RedisClient, index: str, key: str, name: str, state: Any) -> None:
    state.heartbeat = time.time()
    pipe = client.pipeline(transaction=False)
    pipe.set(key, json.dumps(asdict(state)), ex=KEEP_TTL)
    pipe.zadd(index, {name: state.heartbeat})
    pipe.execute()


def publish_master(client: RedisClient, state: MasterState) -> None:
    _publish(client, keys.masters(), keys.master(state.name), state.name, state)


def publish_supervisor(client: RedisClient, state: SupervisorState) -> None:
    _publish(client, keys.supervisors(), keys.supervisor(state.key), state.key, state)


Away = Callable[[float], float]  # heartbeat -> seconds Redis was away since (reach.py)


def fresh(heartbeat: float, now: float, away: Away | None = None) -> bool:
    """Whether a heartbeat is recent enough to count its writer as running: at most
    STATE_TTL old, not counting the time Redis was away since (the writer could not
    publish then; pure but for `away`)."""
    excused = away(heartbeat) if away is not None else 0.0
    return now - heartbeat - excused <= STATE_TTL


def _read(client: RedisClient, index: str, key_of, kind: type, now: float | None,
          away: Away | None) -> list:
    names = [as_str(n) for n in client.zrange(index, 0, -1)]
    if not names:
        return []
    now = time.time() if now is None else now
    blobs = client.mget([key_of(n) for n in names])
    found, stale = [], []
    for name, blob in zip(names, blobs):
        if blob is None:
            stale.append(name)
            continue
        fields = json.loads(blob)
        # a newer master's state read by an older dashboard (a rolling deploy): the
        # fields this one knows, not a TypeError on every page
        known = {f.name for f in dataclass_fields(kind)}
        item = kind(**{k: v for k, v in fields.items() if k in known})
        if fresh(item.heartbeat, now, away):
            found.append(item)
    if stale:
        client.zrem(index, *stale)
    return found


def masters(client: RedisClient, *, now: float | None = None,
            away: Away | None = None) -> list[MasterState]:
    """The masters running: heartbeat `fresh` (`away`: how long Redis was away since a
    heartbeat, as the reader saw it)."""
    return _read(client, keys.masters(), keys.master, MasterState, now, away)


def supervisors(client: RedisClient, *, now: float | None = None,
                away: Away | None = None) -> list[SupervisorState]:
    return _read(client, keys.supervisors(), keys.supervisor, SupervisorState, now, away)


def master_alive(client: RedisClient, name: str) -> bool:
    blob = client.get(keys.master(name))
    return blob is not None and fresh(float(json.loads(blob).get("heartbeat", 0)), time.time())


def forget_master(client: RedisClient, name: str, supervisor_names: list[str]) -> None:
    pipe = client.pipeline(transaction=False)
    pipe.delete(keys.master(name))
    pipe.delete(keys.commands(name))  # one key per call: a cluster pipeline wants that
    pipe.zrem(keys.masters(), name)
    for sup in supervisor_names:
        pipe.delete(keys.supervisor(supervisor_id(name, sup)))
        pipe.zrem(keys.supervisors(), supervisor_id(name, sup))
    pipe.execute()


def overall_status(client: RedisClient) -> str:
    """"running" if any master runs, "paused" if all are paused, else "inactive"."""
    found = masters(client)
    if not found:
        return "inactive"
    return "running" if any(m.status == "running" for m in found) else "paused"
