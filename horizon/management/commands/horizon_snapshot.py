"""Take a metrics snapshot now (the master takes one every minute by itself)."""
from horizon.configuration.settings import horizon_settings
from horizon.repositories import horizon_client, metrics, snapshot_extras
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "Take a metrics snapshot now (not needed with a running master)."

    def handle(self, *args, **options):
        config = horizon_settings()
        count = metrics.take_snapshots(horizon_client(), keep_minutes=config.trim_metrics_minutes,
                                       queues=snapshot_extras.configured_queues(config))
        self.stdout.write(self.style.SUCCESS(f"Snapshotted {count} metric series."))
