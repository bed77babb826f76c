"""A trigram index over the failed store's job, queue and exception text (issue 38): a
text search on the failed list reads the index instead of every row. SQLite gets an FTS5
table kept by triggers, PostgreSQL GIN pg_trgm indexes; other databases get nothing and
keep the windowed search (queueing/state/failed_search.py says why and how)."""
from django.db import migrations


def create(apps, schema_editor) -> None:
    from queueing.state import failed_search

    failed_search.create(schema_editor.connection)
    failed_search.forget()


def drop(apps, schema_editor) -> None:
    from queueing.state import failed_search

    failed_search.drop(schema_editor.connection)
    failed_search.forget()


class Migration(migrations.Migration):
    # Not atomic as a whole: PostgreSQL's extension is tried in a savepoint of its own,
    # and building the index over an existing store is one statement per part.
    atomic = False
    dependencies = [("queueing", "0007_controlvalue_updated_at")]

    operations = [migrations.RunPython(create, drop, elidable=False)]
