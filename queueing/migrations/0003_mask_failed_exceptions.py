"""Mask the exception text of failed-job rows stored before it was masked at rest.

The failed-jobs search matches stored text; rows recorded raw would still answer a
character-by-character search for a masked secret. Rows are rewritten in id-ordered
chunks, and only those the masking policy changes.

Not atomic: each chunk's updates commit on their own, so a large failed table is never
rewritten in one long transaction that holds its rows locked against the workers writing
new failures (a migration interrupted half-way is safe to run again: masking is
idempotent).
"""
from django.db import migrations

CHUNK = 500


def mask_existing(apps, schema_editor):
    from queueing.observability.redaction import mask_text

    failed_job = apps.get_model("queueing", "FailedJob")
    rows = failed_job.objects.using(schema_editor.connection.alias)
    last_id = 0
    while True:
        chunk = list(rows.filter(id__gt=last_id).order_by("id")
                     .values_list("id", "exception")[:CHUNK])
        if not chunk:
            return
        last_id = chunk[-1][0]
        for pk, text in chunk:
            masked = mask_text(text)
            if masked != text:
                rows.filter(id=pk).update(exception=masked)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("queueing", "0002_database_driver")]
    operations = [migrations.RunPython(mask_existing, migrations.RunPython.noop)]
