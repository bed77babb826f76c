"""A cheaper flush after each transactional test, with the same outcome.

About 150 modules use ``django_db(transaction=True)``: the worker processes they start
must see committed rows. After each such test Django's TransactionTestCase runs
``manage.py flush`` on every database the test names, which

* empties every table of the installed apps, 16 here (PostgreSQL: one TRUNCATE of them
  all; SQLite and MariaDB: a DELETE each), written to by the test or not, and then
* emits post_migrate, whose two receivers (contenttypes, auth) put back the content
  types and permissions the flush has just deleted: ~100 rows, a query or two each.

Measured (cProfile of the teardowns of tests/queueing/worker/test_database_worker.py,
42 tests, an idle 2-CPU machine): 9.9 s of teardown, 9.2 s of it the flush; 4.5 s of
that post_migrate, 3.9 s the TRUNCATE/DELETE statements, 0.7 s finding the tables. In
the queue leg under load, teardown was 1,078 s of 3,646 s of summed test time.

Here, for a test without ``available_apps`` or ``serialized_rollback`` (every one in
this suite; those keep Django's own flush), each database it names is left as Django's
flush leaves it, more cheaply:

* The content type and permission tables keep their rows: they are compared (every
  column of every row) with what they held after the first full flush of that database
  in this process, which is what post_migrate makes. A test that changed them (none
  does today) gets Django's full flush and post_migrate, as before.
* Every other table of the installed apps is asked, in one query, whether it holds a
  row, and only those that do are emptied, with the backend's own flush SQL (PostgreSQL
  TRUNCATE ... CASCADE, so that a table referenced by a foreign key may be emptied
  alone: the tables that reference it are empty or emptied with it).

So every table a test can write is empty for the next test, and the content types and
permissions are the very rows post_migrate would have made (their ids no longer change
from test to test). Sequences are not reset, as Django's flush here does not reset them.
HORIZON_TEST_FLUSH_CHECK=1 counts every table's rows after each flush as well (slower: a
check of this module); HORIZON_TEST_DJANGO_FLUSH=1 (tests/conftest.py) keeps Django's
flush, to compare.
"""
from __future__ import annotations

import os

from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connections
from django.test import TransactionTestCase

_django_fixture_teardown = TransactionTestCase._fixture_teardown
# database alias -> the rows of the tables post_migrate fills, after a full flush
_kept_rows: dict[str, dict[str, list[tuple]]] = {}


def _kept_tables() -> list[str]:
    """The tables whose rows post_migrate makes (its receivers: contenttypes, auth)."""
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    return [ContentType._meta.db_table, Permission._meta.db_table]


def _rows(connection, tables: list[str]) -> dict[str, list[tuple]]:
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        found = {}
        for table in tables:
            cursor.execute(f"SELECT * FROM {qn(table)} ORDER BY 1")
            found[table] = [tuple(row) for row in cursor.fetchall()]
    return found


def _tables_with_rows(connection, tables: list[str]) -> list[str]:
    if not tables:
        return []
    qn = connection.ops.quote_name
    query = " UNION ALL ".join(f"SELECT {i}, EXISTS (SELECT 1 FROM {qn(table)})"
                               for i, table in enumerate(tables))
    with connection.cursor() as cursor:
        cursor.execute(query)
        return [tables[i] for i, has_rows in cursor.fetchall() if has_rows]


def full_flush(alias: str) -> None:
    """Django's own flush of a TransactionTestCase, post_migrate included; then the
    rows post_migrate made are kept to compare with."""
    call_command("flush", verbosity=0, interactive=False, database=alias,
                 reset_sequences=False, allow_cascade=False, inhibit_post_migrate=False)
    _kept_rows[alias] = _rows(connections[alias], _kept_tables())


def flush(alias: str) -> None:
    """Empty what the last test wrote in one database; see the module's docstring."""
    connection = connections[alias]
    kept = _kept_tables()
    if alias not in _kept_rows or _rows(connection, kept) != _kept_rows[alias]:
        full_flush(alias)
        return
    tables = [table for table in connection.introspection.django_table_names(
        only_existing=True, include_views=False) if table not in kept]
    dirty = _tables_with_rows(connection, tables)
    if dirty:
        connection.ops.execute_sql_flush(connection.ops.sql_flush(
            no_style(), dirty, reset_sequences=False,
            allow_cascade=connection.vendor == "postgresql"))
    if os.environ.get("HORIZON_TEST_FLUSH_CHECK") == "1":
        _check_flushed(connection, tables, kept, alias)


def _check_flushed(connection, tables: list[str], kept: list[str], alias: str) -> None:
    """HORIZON_TEST_FLUSH_CHECK=1: each table counted after the flush, and the kept ones
    compared again (a slower run that checks this module, not the tests)."""
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"SELECT COUNT(*) FROM {qn(table)}")
            count = cursor.fetchone()[0]
            assert count == 0, f"{alias}: {table} holds {count} rows after the flush"
    assert _rows(connection, kept) == _kept_rows[alias], f"{alias}: kept rows changed"


def _fixture_teardown(self):
    if self.available_apps is not None or self.serialized_rollback:
        return _django_fixture_teardown(self)
    for alias in self._databases_names(include_mirrors=False):
        flush(alias)
    return None


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown


def uninstall() -> None:
    TransactionTestCase._fixture_teardown = _django_fixture_teardown
