"""Audit entries name the app (namespace) the action was scoped to (issue 51). A
database default, so the previous release, still writing entries during a rolling
deploy, inserts rows without the column."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("horizon", "0003_auditentry_address")]
    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="app",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
    ]
