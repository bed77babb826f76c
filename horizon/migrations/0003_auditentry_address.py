"""Audit entries carry the client's address (as the throttles see it, a trusted proxy's
header included). A database default, so the previous release (still writing entries
during a rolling deploy) inserts rows without the column."""
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("horizon", "0002_roles_and_audit")]
    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="address",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
    ]
