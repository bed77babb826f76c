"""Exit 0 when Horizon runs, 1 when paused, 2 when inactive, 3 when Redis cannot be reached
(for scripts and probes: "cannot tell" must not read as "paused" or "inactive").

With ``--master NAME`` it judges that one master (one pod) and says whether it is alive
and whether it is ready, separately (horizon/master_health.py); ``--probe liveness`` or
``--probe readiness`` makes the exit code answer just that question
(queueing/observability/probes.py)."""
import sys
import time

import redis
from django.core.management.base import CommandError

from horizon import master_health
from horizon.management.commands._control import EXIT_UNREACHABLE, reachable_client
from horizon.repositories import state
from queueing.management.base import ProductCommand
from queueing.observability import probes

EXIT_CODES = {"running": 0, "paused": 1, "inactive": 2}


class Command(ProductCommand):
    help = ("Show whether Horizon is running (exit 0), paused (1) or inactive (2); "
            f"exit {EXIT_UNREACHABLE} when Redis cannot be reached. With --master NAME: "
            "that master's liveness and readiness (0 alive and ready, 1 alive but paused, "
            "2 not alive, 3 Redis unreachable); --probe liveness passes a paused master, "
            "and an unreachable Redis, with 0.")

    def add_arguments(self, parser):
        parser.add_argument("--master", default=None, metavar="NAME",
                            help="judge this master only (its HORIZON_NAME or hostname)")
        parser.add_argument("--probe", choices=probes.PROBES, default=None,
                            help="with --master: answer one question with the exit code")

    def handle(self, *args, master, probe, **options):
        if master is None:
            if probe is not None:
                raise CommandError("--probe needs --master NAME (the master of this pod)")
            self._overall()
            return
        try:
            client = reachable_client()
            found = next((m for m in state.masters(client) if m.name == master), None)
        except (CommandError, redis.RedisError) as exc:
            self.stdout.write(f"Master {master}: cannot tell: {exc}")
            sys.exit(probes.exit_code(alive=None, ready=False, probe=probe))
        judged = master_health.judge(found, time.time())
        self.stdout.write(f"Master {master}: {'alive' if judged.alive else 'NOT ALIVE'}, "
                          f"{'ready' if judged.ready else 'not ready'}: {judged.why}")
        code = probes.exit_code(alive=judged.alive, ready=judged.ready, probe=probe)
        if code:
            sys.exit(code)

    def _overall(self) -> None:
        status = state.overall_status(reachable_client())
        self.stdout.write(f"Horizon is {status}.")
        code = EXIT_CODES[status]
        if code:
            sys.exit(code)
