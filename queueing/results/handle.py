"""What application code holds for a job's result: ``queueing.result_of(uuid)``.

    handle = result_of(uuid)              # connection=: where the job was dispatched
    handle.status                         # read now: pending, running, succeeded...
    handle.get(timeout=5)                 # blocks on the wake-up (waiting.py), no polling
    await handle.aget(timeout=5)
    handle.forget()

``get`` returns the job's return value; raises ``JobFailed`` (the job's exception type
and message), ``ResultExpired`` (kept, and its ``keep_result`` has passed) or
``ResultTimeout`` (a ``TimeoutError``: the job has not ended in time). A job that keeps
no result reads as pending forever: ``get`` then waits for its whole timeout.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from queueing import connections
from queueing.middleware.store import state_client
from queueing.results import store, waiting
from queueing.results.store import JobFailed, Record, ResultExpired, ResultTimeout


class ResultHandle:
    """One job's result, by its uuid, on the store of its connection."""

    def __init__(self, uuid: str, connection: str | None = None) -> None:
        self.id = self.uuid = uuid
        self.connection = connection

    def __repr__(self) -> str:
        return f"<ResultHandle {self.uuid}>"

    def __str__(self) -> str:  # a handle stands for its uuid where a uuid was expected
        return self.uuid

    def _client(self) -> Any:
        return state_client(connections.driver(self.connection))

    def read(self) -> Record:
        """The result as it stands now (one round trip)."""
        return store.read(self._client(), self.uuid)

    @property
    def status(self) -> str:
        return self.read().status

    def ready(self) -> bool:
        """Celery's name: the job has ended (or its result has expired)."""
        return self.status in store.FINAL

    def get(self, timeout: float | None = None) -> Any:
        """The job's return value, waiting up to `timeout` seconds (None: for ever)."""
        client = self._client()
        config = waiting.store_config(self.connection)
        ends = None if timeout is None else time.monotonic() + timeout
        record = store.read(client, self.uuid)
        while record.status not in store.FINAL:
            left = None if ends is None else ends - time.monotonic()
            if left is not None and left <= 0:
                raise self._timed_out(timeout, record)
            if waiting.wait_sync(client, store.ready_key(self.uuid),
                                 waiting.slice_for(config, left)):
                record = store.read(client, self.uuid)
        return self._outcome(record)

    async def aget(self, timeout: float | None = None) -> Any:
        """``get`` for async code: it waits on its event loop's one pub/sub connection
        (waiting.Listener), blocking neither the loop nor a connection of its own."""
        config = waiting.store_config(self.connection)
        listen = waiting.listener(config)
        channel = store.ready_key(self.uuid)
        ends = None if timeout is None else time.monotonic() + timeout
        woken = await listen.watch(channel)
        try:
            record = await self._aread(listen.client)
            while record.status not in store.FINAL:
                left = None if ends is None else ends - time.monotonic()
                if left is not None and left <= 0:
                    raise self._timed_out(timeout, record)
                try:
                    await asyncio.wait_for(woken.wait(), left)
                except TimeoutError:
                    raise self._timed_out(timeout, record) from None
                woken.clear()
                record = await self._aread(listen.client)
        finally:
            await listen.unwatch(channel, woken)
        return self._outcome(record)

    async def _aread(self, client: Any) -> Record:
        async with client.pipeline(transaction=False) as pipe:
            pipe.hgetall(store.record_key(self.uuid))
            pipe.exists(store.ready_key(self.uuid))
            stored, ready = await pipe.execute()
        return store.read_record(stored or {}, bool(ready))

    def forget(self) -> None:
        """Drop the kept result now (it then reads as pending)."""
        store.forget(self._client(), self.uuid)

    def _timed_out(self, timeout: float | None, record: Record) -> ResultTimeout:
        return ResultTimeout(f"job {self.uuid} has not ended after {timeout:g}s "
                             f"(it is {record.status})")

    def _outcome(self, record: Record) -> Any:
        if record.status == "succeeded":
            return record.value
        if record.status == "failed":
            raise JobFailed(self.uuid, record.exc_type, record.message)
        raise ResultExpired(f"the result of job {self.uuid} was kept for its keep_result "
                            "seconds and has expired")


def result_of(uuid: str, connection: str | None = None) -> ResultHandle:
    """The handle of the job `uuid` dispatched to `connection` (None: the default)."""
    return ResultHandle(str(uuid), connection)
