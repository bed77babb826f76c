"""The running supervisors (Horizon's ``horizon:supervisors``): processes, queues,
balancing and status."""
import json
from dataclasses import asdict

from horizon.management.commands._control import reachable_client
from horizon.repositories import state
from queueing.management.base import ProductCommand


class Command(ProductCommand):
    help = "List the running supervisors: master, processes, queues, balancing and status."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="a JSON list")

    def handle(self, *args, json: bool = False, **options):
        found = sorted(state.supervisors(reachable_client()), key=lambda s: (s.master, s.name))
        if json:
            self.stdout.write(_dumps([{**asdict(s), "process_count": sum(s.processes.values())}
                                      for s in found]))
            return
        if not found:
            self.stdout.write("No supervisor is running.")
            return
        self.stdout.write(f"{'Name':<24} {'Master':<20} {'Processes':>9} {'Balance':<8} "
                          f"{'Status':<8} Queues")
        for s in found:
            draining = f" (+{s.draining} draining)" if s.draining else ""
            self.stdout.write(f"{s.name:<24} {s.master:<20} {sum(s.processes.values()):>9} "
                              f"{s.balance:<8} {s.status:<8} {s.connection}:"
                              f"{','.join(s.queues)}{draining}")


def _dumps(data) -> str:
    return json.dumps(data, sort_keys=True)
