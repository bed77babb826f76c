"""A supervisor: the pools for one HORIZON block, scaled by queue load."""
from __future__ import annotations

import functools
import socket
import time
from collections.abc import Callable

from horizon.configuration.settings import SupervisorConfig
from horizon.repositories import horizon_client, metrics
from horizon.repositories.state import SupervisorState
from horizon.supervisor import balancer, bounded_scaling
from horizon.supervisor.pool import ProcessPool
from queueing.connections import queue_driver
from queueing.state import heartbeats


class Supervisor:
    def __init__(self, config: SupervisorConfig, master: str, *, output=None,
                 log: Callable[[str], None] = print, stop_timeout: float | None = None
                 ) -> None:
        self.config = config
        self.stop_timeout = stop_timeout  # HORIZON['stop_timeout'], passed to each worker
        self.master = master
        self.log = log
        self.paused = False
        self.last_scaled = 0.0
        self.scaling = bounded_scaling.Memory()  # streaks and recent starts, step to step
        self.pools: dict[str, ProcessPool] = {}
        for name in balancer.pool_names(config.balance, config.queues):
            queues = tuple(name.split(balancer.POOL_ALL))
            self.pools[name] = ProcessPool(
                queues, functools.partial(self.worker_arguments, queues),
                nice=config.nice, output=output,
                log=lambda message: self.log(f"[{config.name}] {message}"))

    @property
    def name(self) -> str:
        return self.config.name

    def worker_arguments(self, queues: tuple[str, ...]) -> list[str]:
        """runworker's arguments for one process of `queues`: the block's options and the
        master's stop timeout (one bound for every worker a stop reaches)."""
        args = self.config.worker_arguments(queues)
        if self.stop_timeout is not None:
            args.append(f"--stop-timeout={self.stop_timeout:g}")
        return args

    def start(self) -> None:
        """Start at the minimum; auto_scale grows the pools from there under load."""
        for pool in self.pools.values():
            pool.scale(self.config.min_processes)

    def load(self) -> tuple[dict[str, int], dict[str, float]]:
        """Pending jobs (from the queue's driver) and average runtime (ms) per queue (from
        Horizon's Redis). A paused queue counts as idle: no worker may take its jobs, so
        more would not help."""
        driver = queue_driver(self.config.connection)
        sizes = driver.sizes_many(self.config.queues)
        client = horizon_client()
        paused = driver.paused_queues()
        runtime = {q: metrics.average_runtime_ms(client, "queue", f"{driver.name}:{q}")
                   for q in self.config.queues}
        return {q: 0 if q in paused else s.pending + s.reserved
                for q, s in sizes.items()}, runtime

    @property
    def limits(self) -> bounded_scaling.Limits:
        """The bound and pace of scaling: processes, draining ones included, never pass
        max_processes (or the pools' minimums when those do not fit under it)."""
        return bounded_scaling.Limits(
            ceiling=bounded_scaling.ceiling(min_processes=self.config.min_processes,
                                            max_processes=self.config.max_processes,
                                            pools=len(self.pools)),
            max_shift=self.config.balance_max_shift)

    def auto_scale(self, now: float | None = None) -> None:
        """Every `balance_cooldown` seconds, move each pool one step toward its target,
        within the bound (bounded_scaling.plan)."""
        now = time.monotonic() if now is None else now
        if self.paused or now - self.last_scaled < self.config.balance_cooldown:
            return
        self.last_scaled = now
        pending, runtime = self.load()
        desired = balancer.desired_processes(
            mode=self.config.balance, queues=self.config.queues, pending=pending,
            runtime_ms=runtime, min_processes=self.config.min_processes,
            max_processes=self.config.max_processes, concurrency=self.config.concurrency)
        current = {name: len(pool) for name, pool in self.pools.items()}
        draining = sum(pool.draining() for pool in self.pools.values())
        limits = self.limits
        targets, self.scaling = bounded_scaling.plan(
            current, desired, draining=draining, memory=self.scaling, now=now,
            limits=limits)
        busy: set[int] | None = None
        for name, target in targets.items():
            if target != current[name]:
                if target < current[name] and busy is None:
                    busy = busy_pids(self.config.connection)
                self.log(f"[{self.name}] scaling {name}: {current[name]} -> {target}"
                         f" ({draining} draining, bound {limits.ceiling})")
                self.pools[name].scale(target, busy or set())

    def monitor(self) -> None:
        for pool in self.pools.values():
            pool.monitor()

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            for pool in self.pools.values():
                pool.pause()
            self.log(f"[{self.name}] paused")

    def resume(self) -> None:
        if self.paused:
            self.paused = False
            for pool in self.pools.values():
                pool.resume()
            self.log(f"[{self.name}] continued")

    def terminate(self) -> None:
        for pool in self.pools.values():
            pool.terminate()

    def kill_overdue(self, grace: float) -> int:
        return sum(pool.kill_overdue(grace) for pool in self.pools.values())

    def all_stopped(self) -> bool:
        return all(pool.all_stopped() for pool in self.pools.values())

    def state(self) -> SupervisorState:
        return SupervisorState(
            name=self.name, master=self.master,
            status="paused" if self.paused else "running",
            connection=self.config.connection, queues=list(self.config.queues),
            balance=self.config.balance,
            processes={name: len(pool) for name, pool in self.pools.items()},
            pids=[pid for pool in self.pools.values() for pid in pool.pids()],
            options=self.config.to_json(),
            draining=sum(pool.draining() for pool in self.pools.values()),
            workers=[worker for pool in self.pools.values() for worker in pool.described()],
        )


def busy_pids(connection: str) -> set[int]:
    """Pids of this host's workers running a job now, from their heartbeats (the index
    and one MGET); empty when the connection has no heartbeat store or Redis is away."""
    driver = queue_driver(connection)
    client = driver.heartbeat_store()
    if client is None:
        return set()
    host = socket.gethostname()
    found = set()
    try:
        workers = heartbeats.workers(client)
    except Exception:  # scaling goes on; it may pick a busy worker this once
        return set()
    for owner, _stamp, state in workers:
        name_host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        if name_host == host and pid.isdigit() and state.get("running"):
            found.add(int(pid))
    return found
