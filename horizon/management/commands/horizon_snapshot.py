"""Take a metrics snapshot now (the master takes one every minute by itself)."""
from django.core.management.base import BaseCommand

from horizon.config import horizon_settings
from horizon.repositories import horizon_client, metrics


class Command(BaseCommand):
    help = "Take a metrics snapshot now (not needed with a running master)."

    def handle(self, *args, **options):
        count = metrics.take_snapshots(horizon_client(),
                                       keep_minutes=horizon_settings().trim_metrics_minutes)
        self.stdout.write(self.style.SUCCESS(f"Snapshotted {count} metric series."))
