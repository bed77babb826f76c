"""Migrations are expand-then-contract (issue 40, item 4): the previous release's code,
still running during a rolling deploy, dispatches on the database driver against the
newest schema (its INSERT, as it wrote it, names no ``deliveries`` column), and no data
migration rewrites a whole table in one transaction."""
import time

import pytest
from django.db import connections as db_connections
from django.db.migrations.loader import MigrationLoader

from queueing import connections
from queueing.entries import payload as payload_lib
from queueing.models import QueuedJob

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

# The previous release's INSERT (queueing/drivers/database/sql.py before 0004): eight
# columns, no deliveries.
PREVIOUS_INSERT = ("INSERT INTO {table} (queue, payload, attempts, priority, available_at, "
                   "reserved_until, reserved_by, created_at) "
                   "VALUES (%s, %s, 0, 0, %s, NULL, '', %s)")


def test_the_previous_release_dispatches_against_the_migrated_schema(dbconn):
    driver = connections.driver(dbconn)
    alias = driver.config.database
    db = db_connections[alias]
    entry = payload_lib.encode({"attempts": 0, "uuid": "u-old-code", "job": "x"})
    now = time.time()
    with db.cursor() as cursor:
        cursor.execute(PREVIOUS_INSERT.format(table=db.ops.quote_name(QueuedJob._meta.db_table)),
                       ["default", entry, now, now])
    row = QueuedJob.objects.using(alias).get(queue="default")
    assert row.deliveries == 0 and row.attempts == 0
    # the new code takes it as any other row: delivered, counted, acknowledged
    held = driver.pop("default")
    assert held is not None and payload_lib.peek(held.raw)["uuid"] == "u-old-code"
    assert QueuedJob.objects.using(alias).get(id=row.id).deliveries == 1
    assert driver.delete(held)
    assert not QueuedJob.objects.using(alias).exists()


def test_data_migrations_commit_in_chunks():
    """A data migration over a whole table (masking failed rows, copying attempts into
    deliveries) is not atomic, so its chunks commit one by one."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    for name in ("0003_mask_failed_exceptions", "0004_queuedjob_deliveries"):
        migration = loader.get_migration("queueing", name)
        assert migration.atomic is False, name
