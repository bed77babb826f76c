"""Count deliveries apart from attempts, so every delivery of a database-driver row has a
token of its own (a handed-back row's next delivery reused the old token). Existing rows
start with deliveries = attempts, so tokens held across the upgrade still match."""
from django.db import migrations, models


def deliveries_from_attempts(apps, schema_editor):
    queued_job = apps.get_model("queueing", "QueuedJob")
    queued_job.objects.using(schema_editor.connection.alias).update(
        deliveries=models.F("attempts"))


class Migration(migrations.Migration):
    dependencies = [("queueing", "0003_mask_failed_exceptions")]
    operations = [
        migrations.AddField(model_name="queuedjob", name="deliveries",
                            field=models.PositiveIntegerField(default=0)),
        migrations.RunPython(deliveries_from_attempts, migrations.RunPython.noop),
    ]
