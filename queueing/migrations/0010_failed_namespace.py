"""The namespace a failed row belongs to (issue 51: several apps in one dashboard).

The column has a database default ('': no namespace), so the previous release's code,
still running during a rolling deploy, inserts rows that read as the default app's.
Rows already stored were written by this project under its own namespace: they take
the namespace of the process that migrates (QUEUE['namespace'] or $QUEUE_NAMESPACE),
so a project that set one keeps seeing its failed jobs after the upgrade.

On SQLite Django adds the column by copying the table, which drops the search index's
triggers (0008); they are made again here (the index's rows keep their ids, so only
rows it lacks are added).
"""
from django.db import migrations, models


def _own_namespace(apps, schema_editor) -> None:
    from queueing.settings import namespace

    own = namespace.process()
    if own:
        failed = apps.get_model("queueing", "FailedJob")
        failed.objects.using(schema_editor.connection.alias).filter(namespace="").update(
            namespace=own)


def _search_index_again(apps, schema_editor) -> None:
    from queueing.state import failed_search

    if schema_editor.connection.vendor == "sqlite":
        failed_search.create(schema_editor.connection)
        failed_search.forget()


class Migration(migrations.Migration):
    atomic = False  # as 0008: the index's backfill is chunks of their own
    dependencies = [("queueing", "0009_deliveries_db_default")]
    operations = [
        migrations.AddField(
            model_name="failedjob",
            name="namespace",
            field=models.CharField(
                blank=True, db_default="", db_index=True, default="", max_length=64,
                help_text="The app's namespace it failed in (QUEUE['namespace']; '' for none)."),
        ),
        migrations.RunPython(_own_namespace, migrations.RunPython.noop),
        migrations.RunPython(_search_index_again, migrations.RunPython.noop, elidable=False),
    ]
