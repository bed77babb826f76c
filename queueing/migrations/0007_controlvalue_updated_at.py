"""A database connection's control rows (a job's exception counter, a cancel request)
say when they were last written, so they can be trimmed by age like the Redis driver's
keys expire (issue 38). NULL: written before 0007 (the first trim stamps them)."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("queueing", "0006_failedjob_tags")]

    operations = [
        migrations.AddField(
            model_name="controlvalue",
            name="updated_at",
            field=models.FloatField(
                blank=True, null=True, db_index=True,
                help_text="Unix time of the last write (NULL: written before 0007)."),
        ),
    ]
