"""manage.py horizon: run the master supervisor (thin: wait for Redis, build, run, exit
with its code)."""
import sys

import redis
from django.core.management.base import CommandError

from horizon.configuration.settings import HorizonConfigError, horizon_settings
from horizon.management.commands._control import EXIT_UNREACHABLE, unreachable
from horizon.repositories import horizon_client
from horizon.supervisor.master import AlreadyRunning, Master
from queueing import connections
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.worker import startup
from queueing.worker.options import DEFAULTS
from queueing.worker.process_control import SignalFlags
from queueing.worker.startup import StoreUnreachable


class Command(ProductCommand):
    help = "Start the Horizon master: spawn, watch and balance the configured workers."

    def add_arguments(self, parser):
        parser.add_argument("--reconnect-timeout", type=float,
                            default=DEFAULTS.reconnect_timeout,
                            help="Seconds to wait for Redis at start, as runworker does "
                                 f"(default {DEFAULTS.reconnect_timeout:g}); then exit 1.")

    def handle(self, *args, **options):
        try:
            config = horizon_settings()
            if not config.supervisors:
                raise CommandError("HORIZON has no supervisors for environment "
                                   f"{config.environment!r}")
            if not self.wait_for_redis(config.connection, options["reconnect_timeout"]):
                return  # a stop signal while it waited: nothing started, exit 0
            master = Master(config, horizon_client(), stdout=self.stdout)
            code = master.run()
        except (HorizonConfigError, QueueError) as exc:
            raise CommandError(str(exc)) from exc
        except AlreadyRunning as exc:
            raise CommandError(str(exc)) from exc
        except redis.RedisError as exc:  # Redis away at start: one line, exit 3
            raise unreachable(exc) from exc
        sys.exit(code)

    def wait_for_redis(self, connection: str, timeout: float) -> bool:
        """Redis away at start (a reboot where the master comes up first, a Redis
        restart): one line, then wait as a worker does, instead of a traceback."""
        driver = connections.redis_driver(connection)
        flags = SignalFlags()
        flags.install_quit()
        try:
            return startup.wait_for_store(driver.ping, timeout=timeout,
                                          stop=lambda: flags.quit, say=self.stderr.write,
                                          where=driver.location())
        except StoreUnreachable as exc:  # one line, exit 3 as horizon_status's "cannot tell"
            raise CommandError(str(exc), returncode=EXIT_UNREACHABLE) from exc
        finally:
            flags.uninstall()
