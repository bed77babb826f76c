"""The failed store keeps each row's tags beside its payload, written once when the row
is, so the failed list's tag facet counts a short column instead of parsing payloads on
every load (issue 38); likewise the exception's class for the grouping by exception.
Rows stored before have NULL: the facets parse only those. One index covers what the
facets and the grouping read of the newest rows, so the database answers them from the
index alone (no row, payload or traceback is read)."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("queueing", "0005_batches")]

    operations = [
        migrations.AddField(
            model_name="failedjob",
            name="tags",
            field=models.TextField(
                blank=True, null=True,
                help_text="The payload's tags, one a line (NULL: stored before 0006)."),
        ),
        migrations.AddField(
            model_name="failedjob",
            name="exception_class",
            field=models.CharField(
                blank=True, max_length=200, null=True,
                help_text="The exception's class as the text starts with it (NULL: before 0006)."),
        ),
        migrations.AddIndex(
            model_name="failedjob",
            index=models.Index(
                fields=["failed_at", "id", "connection", "queue", "job", "exception_class"],
                name="queueing_failed_facets_idx"),
        ),
        migrations.AddIndex(  # the same reads for one queue (the list's queue filter)
            model_name="failedjob",
            index=models.Index(
                fields=["connection", "queue", "failed_at", "id", "job", "exception_class"],
                name="queueing_failed_queue_facets"),
        ),
    ]
