"""Empty the Metrics page's throughput and runtime history (Horizon's
``horizon:clear-metrics``); Prometheus counters keep counting."""

from horizon.management.commands._control import reachable_client
from horizon.repositories import metrics
from queueing.management.base import ProductCommand
from queueing.management.cli_audit import audited


class Command(ProductCommand):
    help = ("Delete the metrics snapshots, rollups and running aggregates the Metrics page "
            "charts. Prometheus counters stay (they never go down).")

    def handle(self, *args, **options):
        deleted = metrics.clear(reachable_client())
        audited("clear metrics", "metrics", f"{deleted} keys deleted")
        self.stdout.write(self.style.SUCCESS(f"Cleared the metrics ({deleted} keys)."))
