"""A database default for ``queueing_jobs.deliveries`` (expand, then contract).

0004 added the column NOT NULL with a default on the Python side only, so the previous
release's code, still running during a rolling deploy, failed every dispatch on the
database driver after ``migrate`` (``IntegrityError: NOT NULL constraint failed:
queueing_jobs.deliveries``): its INSERT does not name the column. With a default in
the database its rows get 0, which the pop counts up from like any other row.

On PostgreSQL and MySQL/MariaDB this is ``ALTER COLUMN ... SET DEFAULT`` (a catalogue
change, no row rewritten); SQLite cannot alter a column, so Django copies its table
once (SQLite jobs tables are single-host and small).
"""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("queueing", "0008_failed_search_index")]
    operations = [
        migrations.AlterField(
            model_name="queuedjob",
            name="deliveries",
            field=models.PositiveIntegerField(db_default=0, default=0),
        ),
    ]
