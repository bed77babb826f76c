"""Count deliveries apart from attempts, so every delivery of a database-driver row has a
token of its own (a handed-back row's next delivery reused the old token). Existing rows
start with deliveries = attempts, so tokens held across the upgrade still match.

Not atomic, and the copy runs in id-ordered chunks that commit one by one: a busy jobs
table is never rewritten in one transaction (workers keep reserving meanwhile). The
previous release's code, which inserts without the column, relies on the database
default that 0009 adds (expand, then contract)."""
from django.db import migrations, models

CHUNK = 1000


def deliveries_from_attempts(apps, schema_editor):
    queued_job = apps.get_model("queueing", "QueuedJob")
    rows = queued_job.objects.using(schema_editor.connection.alias)
    last_id = 0
    while True:
        ids = list(rows.filter(id__gt=last_id).order_by("id").values_list("id", flat=True)
                   [:CHUNK])
        if not ids:
            return
        last_id = ids[-1]
        rows.filter(id__in=ids).update(deliveries=models.F("attempts"))


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("queueing", "0003_mask_failed_exceptions")]
    operations = [
        migrations.AddField(model_name="queuedjob", name="deliveries",
                            field=models.PositiveIntegerField(default=0)),
        migrations.RunPython(deliveries_from_attempts, migrations.RunPython.noop),
    ]
