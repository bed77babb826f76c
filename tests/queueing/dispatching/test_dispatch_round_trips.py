"""What a dispatch sends to Redis, command by command (issue 52: a plain job's
``.delay()`` is one round trip; what a job does not use costs it nothing).

Read with MONITOR on the test's own database: every command a client sends, in order,
the ones a Lua script makes left out (they run inside the one call)."""
import asyncio

import redis

from queueing import dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from tests.testapp import jobs

END = "end-of-dispatch"


def watching(rclient):
    """MONITOR on a client of its own (on the dispatch's client it would take the
    pooled connection, and the dispatch would show a new connection's handshake);
    `rclient`, which sends the end mark, connected before."""
    rclient.ping()
    pool = redis.ConnectionPool(connection_class=rclient.connection_pool.connection_class,
                                **rclient.connection_pool.connection_kwargs)
    return redis.Redis(connection_pool=pool).monitor()


def sent_commands(rclient, action) -> list[str]:
    """The commands clients sent to the test's database while `action()` ran."""
    with watching(rclient) as monitor:
        action()
        return read_to_end(rclient, monitor)


def read_to_end(rclient, monitor) -> list[str]:
    db = rclient.connection_pool.connection_kwargs.get("db", 0)
    rclient.echo(END)
    seen = []
    while True:
        command = monitor.next_command()
        if command["command"] == f"ECHO {END}":
            return seen
        if command.get("client_type") != "lua" and command.get("db") == db:
            seen.append(command["command"].split(" ", 1)[0].upper())


def test_a_plain_delay_is_one_script_call(rclient):
    jobs.record.delay("warm")  # the connection open, the script loaded
    assert sent_commands(rclient, lambda: jobs.record.delay("hello")) == ["EVALSHA"]


def test_a_plain_adelay_is_one_script_call(rclient):
    async def dispatched() -> list[str]:
        await jobs.record.adelay("warm")  # the loop's client connected
        with watching(rclient) as monitor:
            await jobs.record.adelay("hello")
            return read_to_end(rclient, monitor)

    assert asyncio.run(dispatched()) == ["EVALSHA"]


def test_dispatch_many_sends_one_script_call_a_queue(rclient):
    jobs.record.delay("warm")
    signatures = [jobs.record.s(1), jobs.record.using(queue="high").s(2), jobs.record.s(3)]
    assert sent_commands(rclient, lambda: dispatch_many(signatures)) == ["EVALSHA"] * 2


def test_dispatch_many_sends_ready_and_delayed_jobs_to_their_places(rclient):
    """One pipelined round trip on a Redis connection (send_plan, push_plan): every
    queue's jobs and each delayed one still go where they went one call at a time."""
    signatures = [jobs.record.s(1), jobs.record.using(queue="high").s(2),
                  jobs.record.using(delay=60).s(3), jobs.record.s(4)]
    uuids = dispatch_many(signatures)
    assert rclient.llen(QueueKeys.for_queue("default").ready) == 2
    assert rclient.llen(QueueKeys.for_queue("high").ready) == 1
    assert [m.decode() if isinstance(m, bytes) else m
            for m in rclient.zrange(QueueKeys.for_queue("default").delayed, 0, -1)
            if uuids[2] in (m.decode() if isinstance(m, bytes) else m)]
    assert sent_commands(rclient, lambda: dispatch_many(signatures)) == ["EVALSHA"] * 3
