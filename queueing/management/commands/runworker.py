"""manage.py runworker [connection] --queue=high,default ... (thin: parse, validate, run)."""
import argparse
import os
import sys
import time

from django.core import checks
from django.core.management.base import CommandError

from queueing import connections
from queueing.dispatching import registry
from queueing.entries.options import parse_backoff
from queueing.errors import QueueError
from queueing.management.base import ProductCommand
from queueing.observability.job_log import LOG_LEVELS
from queueing.observability.log_fields import iso_timestamp
from queueing.observability.systemd import Notifier
from queueing.worker import early_gc, heartbeat, readiness, startup
from queueing.worker.loop import EXIT_ERROR, Worker
from queueing.worker.options import DEFAULTS, MAX_CONCURRENCY, WorkerOptions, capacity_error
from queueing.worker.process_control import SignalFlags


def non_negative(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
        return value

    parse.__name__ = kind.__name__
    return parse


def backoff_list(text):
    try:
        return parse_backoff(text)
    except QueueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# Checks of what a worker does not run (Command.check): the site it does not serve ("web"
# is Horizon's own), and Horizon's scheduler ("schedules": `manage.py horizon` and
# `manage.py check` run it). "commands": Django's check that migrate and makemigrations
# share an autodetector, which imports both commands and the migration writer; a worker
# runs neither (issue 52).
SITE_CHECK_TAGS = frozenset({"urls", "admin", "templates", "staticfiles", "web", "commands",
                             "schedules"})
# Checks of the site, by name: django.contrib.auth's imports every MIDDLEWARE class to
# look for LoginRequiredMiddleware, and Django's CSRF check imports the failure view (and
# the debug views and template engine behind it) to read its signature: a request's
# concerns, never a job's.
SITE_CHECKS = frozenset({"django.contrib.auth.checks.check_middleware",
                         "django.core.checks.security.csrf.check_csrf_failure_view"})


def worker_checks(registered) -> set:
    """The registered checks a worker runs: every one but the site's (SITE_CHECK_TAGS,
    SITE_CHECKS)."""
    return {check for check in registered
            if not SITE_CHECK_TAGS & set(getattr(check, "tags", ()))
            and _name(check) not in SITE_CHECKS}


def _name(check) -> str:
    return f"{getattr(check, '__module__', '')}.{getattr(check, '__qualname__', '')}"


class Command(ProductCommand):
    help = "Run a worker that processes jobs from the given queues, in priority order."

    def check(self, *args, **kwargs):
        """Django's start-up checks without those of what a worker never serves (issue
        52): the URL conf's check imports every view of the site, the dashboard's
        included, about a tenth of a worker's modules; the middleware and the migration
        commands' checks two dozen more. `manage.py check` and the web process still
        run them; every other check (queueing's, Horizon's settings, the Tasks
        backends', the models', the project's own) runs here as before."""
        registry = checks.registry.registry
        every = registry.registered_checks
        registry.registered_checks = worker_checks(every)
        try:
            return super().check(*args, **kwargs)
        finally:
            registry.registered_checks = every

    def add_arguments(self, parser):
        parser.add_argument("connection", nargs="?", default=None,
                            help="Queue connection (default: QUEUE['default']).")
        parser.add_argument("--queue", default=None,
                            help="Comma-separated queues in priority order (default: the "
                                 "connection's queue).")
        parser.add_argument("--name", default=DEFAULTS.name, help="Worker name, for logs.")
        parser.add_argument("--sleep", type=non_negative(float), default=DEFAULTS.sleep,
                            help="Seconds to wait when idle and not blocking "
                                 f"(default {DEFAULTS.sleep:g}).")
        parser.add_argument("--block-for", type=non_negative(float), default=None,
                            help="Block on Redis for new jobs (seconds); overrides the "
                                 "connection's block_for.")
        parser.add_argument("--tries", type=non_negative(int), default=DEFAULTS.tries,
                            help="Attempts for jobs that do not set tries; 0 = forever.")
        parser.add_argument("--backoff", type=backoff_list, default=DEFAULTS.backoff,
                            help="Seconds before a retry, or a list like 10,60,300.")
        parser.add_argument("--timeout", type=non_negative(float), default=DEFAULTS.timeout,
                            help="Seconds a job may run, unless it sets its own (0 = none).")
        parser.add_argument("--memory", type=non_negative(int), default=DEFAULTS.memory,
                            help="Stop (exit 12) after a job once resident memory passes "
                                 "this many MB (0 = no limit).")
        parser.add_argument("--max-jobs", type=non_negative(int), default=DEFAULTS.max_jobs)
        parser.add_argument("--max-time", type=non_negative(float), default=DEFAULTS.max_time)
        parser.add_argument("--rest", type=non_negative(float), default=DEFAULTS.rest,
                            help="Seconds to rest after each job.")
        parser.add_argument("--once", action="store_true", help="Process one job, then stop.")
        parser.add_argument("--stop-when-empty", action="store_true")
        parser.add_argument("--quiet", action="store_true",
                            help="No per-job lines on stdout (the queueing.job logging "
                                 "records are still emitted).")
        parser.add_argument("--log-level", choices=list(LOG_LEVELS),
                            default=DEFAULTS.log_level,
                            help="The least level of a per-job stdout line: error keeps the "
                                 "FAILED lines only, warning adds RELEASED and STOPPED "
                                 f"(default {DEFAULTS.log_level}).")
        parser.add_argument("--prefetch", type=non_negative(int), default=DEFAULTS.prefetch,
                            help="Most jobs reserved per round trip when jobs are fast "
                                 f"(default {DEFAULTS.prefetch}; 1 turns prefetch off).")
        parser.add_argument("--concurrency", type=non_negative(int),
                            default=DEFAULTS.concurrency,
                            help="Jobs in flight at once: sync jobs on threads, async def "
                                 f"jobs on one event loop (default {DEFAULTS.concurrency}, "
                                 f"at most {MAX_CONCURRENCY}).")
        parser.add_argument("--stop-timeout", type=non_negative(float),
                            default=DEFAULTS.stop_timeout,
                            help="On SIGTERM/SIGINT/SIGQUIT, running jobs may finish for "
                                 "this many seconds (each up to its own timeout); what "
                                 "still runs then is handed back to its queue, its attempt "
                                 f"not counted (default {DEFAULTS.stop_timeout:g}).")
        parser.add_argument("--reconnect-timeout", type=non_negative(float),
                            default=DEFAULTS.reconnect_timeout,
                            help="Exit 1 after this many seconds without Redis (default "
                                 f"{DEFAULTS.reconnect_timeout:g}; each try also waits up "
                                 "to the connection's socket_timeout).")

    def handle(self, *args, **opts):
        early_gc.resume()  # the start's imports are done: freeze them, collect from here on
        try:
            driver = connections.queue_driver(opts["connection"])
            raw = driver.config.queue if opts["queue"] is None else opts["queue"]
            names = [q.strip() for q in raw.split(",")]
            queues = tuple(dict.fromkeys(driver.config.check_queue(q) for q in names if q))
        except (QueueError, ValueError) as exc:  # ValueError: a URL redis-py cannot parse
            raise CommandError(str(exc)) from exc
        if not queues:
            raise CommandError(
                f"--queue={opts['queue']!r} names no queue: give one or more names like "
                f"--queue=high,default, or leave --queue out to use connection "
                f"{driver.name!r}'s queue {driver.config.queue!r}")
        problem = capacity_error(max(opts["prefetch"], 1), max(opts["concurrency"], 1))
        if problem:
            raise CommandError(problem.replace("prefetch ", "--prefetch=", 1)
                               .replace("concurrency ", "--concurrency=", 1))
        flags = SignalFlags()
        flags.install_quit()  # from here on a SIGTERM is a clean stop, never a death
        try:  # before reporting ready; a store that is away is waited for, as a running
            # worker waits (a database connection answers at once: it connects lazily)
            reached = startup.wait_for_store(
                driver.ping, timeout=opts["reconnect_timeout"], stop=lambda: flags.quit,
                say=self.stderr.write,
                where=driver.location())
        except startup.StoreUnreachable as exc:
            flags.uninstall()
            raise CommandError(str(exc)) from exc
        if not reached:
            flags.uninstall()
            return  # stopped while it waited for the store: nothing taken, exit 0
        options = WorkerOptions(
            connection=driver.name, queues=queues, name=opts["name"], sleep=opts["sleep"],
            block_for=opts["block_for"], tries=opts["tries"], backoff=opts["backoff"],
            timeout=opts["timeout"], memory=opts["memory"], max_jobs=opts["max_jobs"],
            max_time=opts["max_time"], rest=opts["rest"], once=opts["once"],
            stop_when_empty=opts["stop_when_empty"], quiet=opts["quiet"],
            log_level=opts["log_level"],
            prefetch=max(opts["prefetch"], 1), reconnect_timeout=opts["reconnect_timeout"],
            concurrency=max(opts["concurrency"], 1), stop_timeout=opts["stop_timeout"],
        )
        worker = Worker(driver, options, stdout=self.stdout, stderr=self.stderr, flags=flags)
        if not options.quiet:
            self.stdout.write(f"{iso_timestamp(time.time())} {registry.describe_modules()}")
        readiness.report_ready()  # to a supervisor, if one started us (worker/readiness.py)
        Notifier().ready()  # to systemd, under a Type=notify unit (queueing.observability.systemd)
        # the heartbeat lets the dashboard see the worker die, and what it runs
        with heartbeat.beating(driver, worker.owner, _published(worker, options)):
            code = worker.run()
        if code == EXIT_ERROR:
            # A timed-out job may have left threads behind; leave without waiting for them.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        if code:
            sys.exit(code)


def _published(worker: Worker, options: WorkerOptions):
    """What the heartbeat publishes: the worker's slots and running jobs, plus its
    default timeout and kill grace (Running now shows each job's progress toward its
    timeout; a job's own timeout, from its payload, wins)."""
    def state() -> dict:
        return {**worker.heartbeat_state(), "timeout": options.timeout,
                "grace": options.kill_grace}
    return state
