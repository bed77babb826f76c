"""A substring index over the failed store's text, so a search reads the index, not rows.

Why: the failed list's text search ("SMTP", a file name from a traceback) is a
case-insensitive substring match over the job name, the queue and the exception text.
Without an index every search, and the bulk-action count beside it, read every row's
whole exception (100,000 rows of ~1.5 KB: 300-900 ms a load), so the list searched a
window of the newest rows at a time instead. Trigram indexes answer substring matches
of three characters or more directly:

- SQLite: an FTS5 table with the ``trigram`` tokenizer (SQLite 3.34+), kept by
  triggers in step with ``queueing_failedjob`` (an external-content table: the text
  is stored once, in the failed table).
- PostgreSQL: GIN ``gin_trgm_ops`` indexes (the ``pg_trgm`` extension, trusted since
  PostgreSQL 13, so the migrating role can create it), used by ``ILIKE``.

Elsewhere (MySQL/MariaDB, an SQLite built without FTS5, a role that may not create the
extension) and for needles shorter than three characters, `text_match` returns None
and the list keeps its windowed search. Migration 0008 creates what the database
supports; `available` asks the database, once per process and alias, whether it is there.
"""
from __future__ import annotations

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import Q, QuerySet
from django.db.models.expressions import RawSQL

TABLE = "queueing_failedjob"
SQLITE_INDEX = "queueing_failed_search"
PG_INDEXES = {column: f"queueing_failed_{column}_trgm" for column in ("job", "queue",
                                                                     "exception")}
MIN_LENGTH = 3  # a trigram index finds substrings of three characters or more

_present: dict[str, bool] = {}


def create(connection) -> bool:
    """Build the index on `connection` (migration 0008). False where the database cannot
    (the search then stays windowed, as before): never fails the migration for it."""
    vendor = connection.vendor
    with connection.cursor() as cursor:
        if vendor == "sqlite":
            return _create_sqlite(connection, cursor)
        if vendor == "postgresql":
            return _create_postgresql(connection, cursor)
    return False


BACKFILL_CHUNK = 2000  # existing rows indexed per transaction by migration 0008


def _create_sqlite(connection, cursor) -> bool:
    """The FTS5 table, its triggers, then the existing rows in chunks of their own.

    Why chunks: SQLite has one write lock for the whole file, and indexing 100,000 rows
    in one statement held it for 15-50 s, stalling every worker that records a failure
    or uses a database queue meanwhile. Rows not yet indexed are known by the index's
    own ``_docsize`` table (one row per indexed id): the delete and update triggers only
    take out what is in, and each chunk only adds what is not, so writes that land
    between chunks leave the index exact."""
    from django.db import OperationalError, transaction

    try:
        with transaction.atomic(using=connection.alias):
            cursor.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {SQLITE_INDEX} USING fts5("
                f"job, queue, exception, content='{TABLE}', content_rowid='id', "
                "tokenize='trigram')")
    except OperationalError:  # no FTS5, or no trigram tokenizer (SQLite < 3.34)
        return False
    columns = "job, queue, exception"
    new = "new.id, new.job, new.queue, new.exception"
    # 'delete' takes out the tokens of the values given: only for a row that is in
    take_out = (f"INSERT INTO {SQLITE_INDEX}({SQLITE_INDEX}, rowid, {columns}) "
                "SELECT 'delete', old.id, old.job, old.queue, old.exception WHERE EXISTS "
                f"(SELECT 1 FROM {SQLITE_INDEX}_docsize WHERE id = old.id);")
    put_in = f"INSERT INTO {SQLITE_INDEX}(rowid, {columns}) VALUES ({new});"
    with transaction.atomic(using=connection.alias):
        for statement in (
            f"CREATE TRIGGER IF NOT EXISTS {SQLITE_INDEX}_insert AFTER INSERT ON {TABLE} "
            f"BEGIN {put_in} END",
            f"CREATE TRIGGER IF NOT EXISTS {SQLITE_INDEX}_delete AFTER DELETE ON {TABLE} "
            f"BEGIN {take_out} END",
            f"CREATE TRIGGER IF NOT EXISTS {SQLITE_INDEX}_update AFTER UPDATE OF {columns} "
            f"ON {TABLE} BEGIN {take_out} {put_in} END",
        ):
            cursor.execute(statement)
    cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {TABLE}")
    newest = cursor.fetchone()[0]
    for low in range(0, newest, BACKFILL_CHUNK):
        with transaction.atomic(using=connection.alias):
            cursor.execute(
                f"INSERT INTO {SQLITE_INDEX}(rowid, {columns}) SELECT id, {columns} "
                f"FROM {TABLE} WHERE id > %s AND id <= %s AND id NOT IN "
                f"(SELECT id FROM {SQLITE_INDEX}_docsize WHERE id > %s AND id <= %s)",
                [low, low + BACKFILL_CHUNK, low, low + BACKFILL_CHUNK])
    return True


def _create_postgresql(connection, cursor) -> bool:
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic(using=connection.alias):  # a savepoint: a refusal
            cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")  # leaves the rest
    except DatabaseError:
        return False
    # CONCURRENTLY (migration 0008 is not atomic): workers keep writing failures while
    # an existing store is indexed, instead of waiting for the whole build.
    for column, name in PG_INDEXES.items():
        cursor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {TABLE} "
                       f"USING gin ({column} gin_trgm_ops)")
    return True


def drop(connection) -> None:
    """Undo `create` (migrating 0008 backwards)."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for suffix in ("insert", "delete", "update"):
                cursor.execute(f"DROP TRIGGER IF EXISTS {SQLITE_INDEX}_{suffix}")
            cursor.execute(f"DROP TABLE IF EXISTS {SQLITE_INDEX}")
        elif connection.vendor == "postgresql":
            for name in PG_INDEXES.values():
                cursor.execute(f"DROP INDEX IF EXISTS {name}")


def available(using: str) -> bool:
    """Is the index there on database `using`? Asked once per process and alias."""
    if using not in _present:
        connection = connections[using]
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("SELECT 1 FROM sqlite_master WHERE name = %s", [SQLITE_INDEX])
            elif connection.vendor == "postgresql":
                cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s",
                               [PG_INDEXES["exception"]])
            else:
                _present[using] = False
                return False
            _present[using] = cursor.fetchone() is not None
    return _present[using]


def forget() -> None:
    """Ask the database again next time (tests that build or drop the index)."""
    _present.clear()


def newest_matches(needle: str, rows: QuerySet, start: int, count: int
                   ) -> list[int] | None:
    """Ids of `rows` (a filtered failed-store queryset) whose text contains `needle`,
    newest stored first, `count` of them from match `start`; None without an index.

    On SQLite the index drives the loop (rowid order, newest first, stopping after
    `count`), each candidate checked against the other filters by primary key: a
    common needle ("Error") costs the page's rows, not every match. Elsewhere the
    database plans the indexed filter itself."""
    match = text_match(needle, rows.db)
    if match is None:
        return None
    if connections[rows.db].vendor != "sqlite":
        return list(rows.filter(match).order_by("-id")
                    .values_list("id", flat=True)[start:start + count])
    try:
        sql, params = rows.order_by().values("id").query.sql_with_params()
    except EmptyResultSet:
        return []
    with connections[rows.db].cursor() as cursor:
        cursor.execute(f"SELECT s.rowid FROM {SQLITE_INDEX} s CROSS JOIN ({sql}) f "
                       f"ON f.id = s.rowid WHERE {SQLITE_INDEX} MATCH %s "
                       "ORDER BY s.rowid DESC LIMIT %s OFFSET %s",
                       [*params, _phrase(needle), count, start])
        return [row[0] for row in cursor.fetchall()]


COUNT_CAP = 1000  # matches counted exactly; past it a search says "1,000+"


def count_matches(needle: str, rows: QuerySet) -> tuple[int, int, bool] | None:
    """How many of `rows` contain `needle` (up to `COUNT_CAP`, and whether there are
    more), and the newest id among them (the bulk actions' bound); None without an index.

    Why a cap: an exact count of a common needle ("Error" in 100,000 rows) reads every
    match (0.3-2 s on SQLite), on every 2-second refresh, for a number the operator
    only needs to the nearest "more than 1,000"; the bulk action still acts on every
    match up to the newest id, and says how many it acted on."""
    ids = newest_matches(needle, rows, 0, COUNT_CAP + 1)
    if ids is None:
        return None
    return min(len(ids), COUNT_CAP), (ids[0] if ids else 0), len(ids) > COUNT_CAP


def _phrase(needle: str) -> str:
    """`needle` as one FTS5 string: matched as it is, never read as query operators."""
    return '"' + needle.replace('"', '""') + '"'


def text_match(needle: str, using: str) -> Q | None:
    """Rows whose job, queue or exception contains `needle` (case-insensitively),
    through the index; None when there is no index here or the needle is too short for
    one (the caller then searches a window of rows instead)."""
    if len(needle) < MIN_LENGTH or not available(using):
        return None
    if connections[using].vendor == "sqlite":
        return Q(id__in=RawSQL(f"SELECT rowid FROM {SQLITE_INDEX} "
                               f"WHERE {SQLITE_INDEX} MATCH %s", [_phrase(needle)]))
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return Q(id__in=RawSQL(f"SELECT id FROM {TABLE} WHERE job ILIKE %s OR queue ILIKE %s "
                           "OR exception ILIKE %s", [pattern] * 3))
