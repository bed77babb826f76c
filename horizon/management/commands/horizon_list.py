"""The running Horizon masters (Horizon's ``horizon:list``): name, pid, host, status and
supervisors."""
import json
from dataclasses import asdict

from horizon.management.commands._control import reachable_client
from horizon.repositories import state
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "List the running Horizon masters: name, pid, host, status and supervisors."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="a JSON list")

    def handle(self, *args, json: bool = False, **options):
        masters = sorted(state.masters(reachable_client()), key=lambda m: m.name)
        if json:
            self.stdout.write(_dumps([asdict(m) for m in masters]))
            return
        if not masters:
            self.stdout.write("No Horizon master is running.")
            return
        self.stdout.write(f"{'Name':<24} {'PID':>8} {'Host':<24} {'Status':<8} Supervisors")
        for m in masters:
            self.stdout.write(f"{m.name:<24} {m.pid:>8} {m.host:<24} {m.status:<8} "
                              f"{', '.join(m.supervisors) or '—'}")


def _dumps(data) -> str:
    return json.dumps(data, sort_keys=True)
