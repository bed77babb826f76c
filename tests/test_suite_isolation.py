"""The suite's own isolation (issue 46): what one module leaves must not break the next.

Playwright's sync API leaves an asyncio loop marked as running in the main thread for the
rest of a session. With a loop marked running, Django's connections in that thread are a
second set (asgiref's thread-critical Local keeps them in a context variable). When the
mark was hidden by a fixture that pytest-django's database fixture preceded, a test's
transaction and the test's own queries used two different SQLite connections, and the
test's first write waited 30 s for the write lock its own transaction held ("database is
locked" at set-up, in whole stretches of modules after a browser module). The mark is now
hidden for a test's whole protocol (tests/conftest.py, pytest_runtest_protocol).
"""
import asyncio
import os

import pytest
from django.contrib.auth.models import User
from django.db import connection

from tests import isolation


@pytest.fixture(scope="module")
def a_loop_left_running():
    """What the browser fixture leaves behind: a loop marked running in this thread (and
    Django's async-safety check off, as tests/browser/conftest.py turns it off)."""
    allowed = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    loop = asyncio.new_event_loop()
    asyncio._set_running_loop(loop)
    yield loop
    asyncio._set_running_loop(None)
    loop.close()
    if allowed is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.mark.django_db
@pytest.mark.parametrize("turn", ["first test of the module", "a later test"])
def test_a_test_writes_on_the_connection_of_its_own_transaction(a_loop_left_running, turn):
    assert connection.in_atomic_block, "the test's queries go to its transaction's connection"
    User.objects.create_user(f"writer-{turn}")  # on another connection: 30 s, then locked
    assert User.objects.filter(username=f"writer-{turn}").exists()


def test_a_transaction_nobody_holds_is_named_and_rolled_back(tmp_path):
    """The guard's own check: a connection dropped in a transaction (its thread or
    wrapper gone) is found, named, and collected, which lets the write lock go."""
    import sqlite3

    path = str(tmp_path / "t.sqlite3")
    sqlite3.connect(path).execute("CREATE TABLE t (x)")
    left = sqlite3.connect(path, isolation_level=None)
    left.execute("BEGIN IMMEDIATE")
    left.execute("INSERT INTO t VALUES (1)")
    cycle = [left]
    cycle.append(cycle)  # only a reference cycle keeps it: garbage until collected
    del left, cycle
    found = isolation.abandoned_transactions()
    assert len(found) == 1 and "left open by a connection nobody holds" in found[0]
    assert isolation.sqlite_write_lock_problem(path, wait=1.0) is None
