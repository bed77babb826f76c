"""manage.py horizon: run the master supervisor (thin: build, run, exit with its code)."""
import sys

import redis
from django.core.management.base import BaseCommand, CommandError

from horizon.config import HorizonConfigError, horizon_settings
from horizon.management.commands._control import unreachable
from horizon.repositories import horizon_client
from horizon.supervisor.master import AlreadyRunning, Master
from queueing.errors import QueueError


class Command(BaseCommand):
    help = "Start the Horizon master: spawn, watch and balance the configured workers."

    def handle(self, *args, **options):
        try:
            config = horizon_settings()
            if not config.supervisors:
                raise CommandError("HORIZON has no supervisors for environment "
                                   f"{config.environment!r}")
            master = Master(config, horizon_client(), stdout=self.stdout)
            code = master.run()
        except (HorizonConfigError, QueueError) as exc:
            raise CommandError(str(exc)) from exc
        except AlreadyRunning as exc:
            raise CommandError(str(exc)) from exc
        except redis.RedisError as exc:  # Redis away at start: one line, exit 3
            raise unreachable(exc) from exc
        sys.exit(code)
