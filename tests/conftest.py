import copy
import os
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from queueing import connections

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """What the tests start carries this process's mark, so a process a module leaves
    running is found even once its parent is gone (tests/isolation.py)."""
    from tests import isolation

    isolation.mark_this_session()


@pytest.fixture(autouse=True)
def test_abandons_no_transaction():
    """With HORIZON_TEST_ORPHAN_CHECK=each, the abandoned-transaction check of
    module_leaves_nothing_running runs after every test instead (slower: a scan of the
    heap per test), to name the test rather than the module."""
    yield
    if os.environ.get("HORIZON_TEST_ORPHAN_CHECK") == "each":
        from tests import isolation

        abandoned = isolation.abandoned_transactions()
        if abandoned:
            pytest.fail("; ".join(abandoned), pytrace=False)


@pytest.fixture(scope="module", autouse=True)
def module_leaves_nothing_running():
    """A module may not leave a process it started running, nor the suite's SQLite file
    write-locked: either made later modules fail far from their cause with "database is
    locked" (tests/isolation.py)."""
    from tests import isolation

    isolation.record_transaction_starts()
    before = isolation.running_descendants()
    yield
    left = isolation.left_running(before)
    abandoned = isolation.abandoned_transactions()
    locked = isolation.sqlite_write_lock_problem(settings.DATABASES["default"]["NAME"])
    problems = ([f"left running after the module (killed now): {left}"] if left else []) + (
        abandoned) + ([locked] if locked else [])
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def flush_only_what_a_test_wrote():
    """After a transactional test, each database it names is emptied of what the test
    wrote, and content types and permissions are kept rather than deleted and made
    again by post_migrate (tests/flushing.py: the same state as Django's flush leaves,
    for about a fifth of its cost). HORIZON_TEST_DJANGO_FLUSH=1 keeps Django's own flush,
    to compare."""
    from tests import flushing

    if os.environ.get("HORIZON_TEST_DJANGO_FLUSH") == "1":
        yield
        return
    flushing.install()
    yield
    flushing.uninstall()


@pytest.fixture(scope="session")
def django_db_modify_db_settings():
    """pytest-django would add a ``_gwN`` suffix to each test database's name under
    pytest-xdist. tests/settings.py already names every database per worker process, and
    the worker processes a test spawns must find the same names, so nothing is added."""


@pytest.fixture(autouse=True)
def clean_redis():
    """Each test starts with an empty Redis database."""
    from horizon.dashboard.failed import failures
    from horizon.dashboard.jobs import facet_counts

    client = connections.redis_driver("redis").client
    client.flushdb()
    facet_counts.forget_failed_counts()  # the failed list's counts, reused for 2 s
    failures.forget_groups()  # and its exception groups'
    facet_counts.forget_job_counts()  # the job lists' kept counts and estimates
    yield
    # a kept count's refresh still running would store counts into the next test
    deadline = time.monotonic() + 10
    while (facet_counts._failed_counts.refreshing or failures._kept_groups.refreshing
           or facet_counts._job_counts.refreshing) and time.monotonic() < deadline:
        time.sleep(0.01)
    # The driver of now, not the one taken above: a settings override since (every
    # test's database_connections_only_where_used) closed that one, and a command on it
    # would open a socket in a pool nobody holds any more, one leaked a test (a process
    # of the Django 6 leg passed 1,024 descriptors).
    connections.redis_driver("redis").client.flushdb()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Playwright's sync API (the session's browser fixture) leaves its event loop marked
    as running in the main thread for the rest of the session. Outside the browser tests
    it is hidden for a test's whole protocol, its fixtures' setup and teardown included,
    and put back after.

    Why the whole protocol, not a fixture: with a loop marked running, Django's
    connections in this thread (asgiref's thread-critical Local) are a second set, kept
    in a context variable. Hidden by a fixture that pytest-django's database fixture
    preceded, the test's transaction (BEGIN IMMEDIATE, holding SQLite's write lock) was
    opened on one connection and the test's own writes went to the other, which waited
    30 s for that lock: the "database is locked" errors at set-up that `make test` met in
    whole stretches of dashboard modules after a browser module (issue 46). Async code
    under test (async_to_sync, asyncio.run) also refuses to start under a marked loop."""
    import asyncio

    loop = asyncio._get_running_loop()
    if loop is None or "tests/browser/" in str(item.path):
        return (yield)
    asyncio._set_running_loop(None)
    try:
        return (yield)
    finally:
        asyncio._set_running_loop(loop)


@pytest.fixture(autouse=True)
def in_process_workers_ignore_the_runners_memory(monkeypatch):
    """A Worker run inside pytest would measure the test runner's resident memory (every
    module the suite imported), not a worker's, and stop with exit 12 at --memory 128.
    The memory limit itself is tested on real worker processes."""
    import queueing.worker.loop

    monkeypatch.setattr(queueing.worker.loop, "memory_mb", lambda: 0.0)


@pytest.fixture
def one_queue(settings):
    """One supervisor serving the default queue: a page's queue pickers and counts then
    show that one queue, as a test pushing to "default" expects."""
    settings.HORIZON = {**settings.HORIZON,
                        "supervisors": {"supervisor-1": {"queues": ["default"]}}}


@pytest.fixture
def driver():
    return connections.redis_driver("redis")


@pytest.fixture
def rclient(driver):
    return driver.client


@pytest.fixture
def own_redis(settings):
    """The "redis" connection pointed at a Redis server of its own, which the test may
    stop (the dashboard's health pages and banners)."""
    from tests.backends import start_backend

    server = start_backend("redis")
    config = copy.deepcopy(settings.QUEUE)
    config["connections"]["redis"]["url"] = server.url
    settings.QUEUE = config
    yield server
    server.stop()


@pytest.fixture
def failover(settings, dbconn):
    """'fo': a dead Redis first, then the database connection `dbconn` (the failover
    tests on the database side; a module may define its own)."""
    from tests.helpers import dead_redis_failover

    with dead_redis_failover(settings, dbconn):
        yield dbconn


def manage_command(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def subprocess_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    env["PYTHONUNBUFFERED"] = "1"
    # A failed test's report shows where a spawned process it still waits on stands: its
    # threads' stacks, which faulthandler writes to its output on SIGABRT (WorkerProcess.
    # stacks). A worker that said nothing in 10 s failed a CI run, and nothing told why.
    env["PYTHONFAULTHANDLER"] = "1"
    # Spawned processes never use MariaDB (only the driver-level tests do, in this
    # process), and its test database exists only once those tests made it: Django 6.1's
    # model checks, which every command runs at start, connect to each MySQL database.
    env["HORIZON_TEST_MARIA"] = ""
    env.update(extra)
    return env


SPAWNED = pytest.StashKey[list]()
SPAWNED_OUTPUT_LINES = 80  # the tail of each spawned process's output a failed test shows


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """A failed test that spawned processes shows the tail of what each one said, in its
    report: a master or worker that never came up says why in CI's log, where nothing
    else would. A runworker still running is made to dump its threads' stacks (and ends
    there): one that hangs says where. A master is left alone: its workers lead groups of
    their own, which its teardown finds through it."""
    report = yield
    if report.when == "call" and report.failed:
        for worker in item.stash.get(SPAWNED, []):
            title, tail = worker.title(), worker.output_tail(SPAWNED_OUTPUT_LINES)
            report.sections.append((f"output of {title}", tail))
            stacks = worker.stacks() if worker.argv[0] == "runworker" else ""
            if stacks:
                report.sections.append((f"where {title} stood", stacks))
    return report


@pytest.fixture
def spawn_worker(request):
    """Start runworker processes; every one still running is killed at teardown."""
    from tests.workers import WorkerProcess

    started = request.node.stash.setdefault(SPAWNED, [])

    def spawn(*args, env=None, command="runworker"):
        worker = WorkerProcess(*args, env=env, command=command)
        started.append(worker)
        return worker

    yield spawn
    for worker in started:
        worker.stop()


# -- database driver: one fixture per backend --------------------------------------------
DB_CONNECTIONS = ("db-pg", "db-lite", "db-maria")
# The databases worker-level tests flush after each test (MariaDB only serves the
# driver-level tests, and every flushed database costs time).
WORKER_DATABASES = [alias for alias in ("default", "pg") if alias in settings.DATABASES]


@pytest.fixture(autouse=True)
def database_connections_only_where_used(request, monkeypatch):
    """The database connections exist for the test_database* modules; elsewhere they are
    left out of QUEUE (here and in spawned processes) so Redis-only tests never touch
    them."""
    module = request.module.__name__
    if "test_database_driver" in module:
        yield
        return
    from django.test import override_settings

    if "database" in module or "dbconn" in request.fixturenames:
        # worker-level modules, and tests elsewhere that take a database connection: the
        # databases they flush only
        keep = set(WORKER_DATABASES)
    else:
        keep = set()
        monkeypatch.setenv("HORIZON_TEST_DB_CONNECTIONS", "0")
    queue = dict(settings.QUEUE)
    queue["connections"] = {name: block for name, block in queue["connections"].items()
                            if block.get("driver") != "database"
                            or block.get("database", "default") in keep}
    horizon = dict(settings.HORIZON)
    horizon["environments"] = {name: env for name, env in horizon["environments"].items()
                               if name != "mixed" or keep}
    with override_settings(QUEUE=queue, HORIZON=horizon):
        yield


DB_ALIASES = {"db-pg": "pg", "db-lite": "default", "db-maria": "maria"}


def _flushing_the_databases_it_uses(name: str):
    """A `dbconn` parameter whose test flushes the worker-level databases and its own
    connection's, not MariaDB's for the others: a transaction test flushes every
    database it names after each test, and the driver modules' marks name them all
    (with Django's own flush, MariaDB's took 6-8 s a test on a loaded 2-CPU machine;
    tests/flushing.py's is cheaper, but a database named still costs a round of
    queries a test). The parameter's mark is the test's closest, so it
    replaces the module's for these tests only. SQLite's tests keep PostgreSQL's: the
    other database connections stay configured beside theirs and are read (monitors,
    trimmers)."""
    databases = [alias for alias in dict.fromkeys((*WORKER_DATABASES, DB_ALIASES[name]))
                 if alias in settings.DATABASES]
    return pytest.param(name, marks=pytest.mark.django_db(transaction=True,
                                                          databases=databases))


@pytest.fixture(params=[_flushing_the_databases_it_uses(name) for name in DB_CONNECTIONS])
def dbconn(request):
    """A database connection's name (PostgreSQL, then SQLite), with an empty jobs table."""
    from django.conf import settings

    from queueing.models import ControlValue, PausedQueue, QueuedJob

    name = request.param
    if name == "db-maria" and "test_database_driver" not in request.module.__name__:
        pytest.skip("MariaDB is covered by the driver-level tests only")
    if name not in settings.QUEUE["connections"]:
        if name == "db-maria":
            pytest.skip(f"MariaDB tests skipped: {settings.MARIA_SKIP_REASON}")
        pytest.skip(f"PostgreSQL tests skipped: {settings.PG_SKIP_REASON}")
    alias = settings.QUEUE["connections"][name]["database"]
    for model in (QueuedJob, PausedQueue, ControlValue):
        model.objects.using(alias).all().delete()
    return name


@pytest.fixture(scope="session", autouse=True)
def database_server_facts_read_once(django_db_setup, django_db_blocker):
    """Django 6 asks MariaDB its version inside the model checks (is UUID a native type?),
    once per connection wrapper; a test running `manage.py check` without database access
    then failed or passed by whether an earlier test on its process had connected. Asked
    once, up front, for every process."""
    from django.db import connections as databases

    if "maria" not in settings.DATABASES:
        return
    wrapper = databases["maria"]
    name = wrapper.settings_dict["NAME"]
    # The server's facts need no database (the test database exists only on a process
    # whose tests asked for it).
    wrapper.settings_dict["NAME"] = ""
    try:
        with django_db_blocker.unblock():
            wrapper.mysql_server_info  # noqa: B018 (a cached property, read and kept)
    finally:
        wrapper.settings_dict["NAME"] = name


@pytest.fixture(scope="session", autouse=True)
def close_database_drivers(django_db_setup):
    """Drivers hold private sessions; close them before the test databases are dropped
    (and end any a server thread left open, which would block DROP DATABASE)."""
    yield
    connections.reset()
    if "pg" in settings.DATABASES:
        import psycopg

        pg = settings.DATABASES["pg"]
        try:
            with psycopg.connect(dbname="postgres", user=pg["USER"], password=pg["PASSWORD"],
                                 host=pg["HOST"], port=pg["PORT"], autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = %s AND pid <> pg_backend_pid()", [pg["NAME"]])
        except psycopg.Error:
            pass  # pytest-django reports a database it could not drop
