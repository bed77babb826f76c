"""WorkerOptions: how one worker process behaves (the runworker flags, typed).

The field defaults are the worker defaults, written once: ``runworker``'s flags and a
Horizon supervisor's options (``horizon.configuration.supervisor.SUPERVISOR_DEFAULTS``)
read them from ``DEFAULTS``."""
from __future__ import annotations

from queueing.contract.records import record

# Most jobs one process runs at once: each sync one holds a thread, and each may hold one
# of the process's Redis connections (queueing.connections.SYNC_MAX_CONNECTIONS).
MAX_CONCURRENCY = 500
# Rows of the in-flight table (table_memory.MAX_ROWS) a worker may fill: running jobs, up to
# one and a half prefetches waiting (the loop tops up at half), and the finished rows
# whose acknowledgement is under way (at most ACK_ROWS).
TABLE_ROWS = 4096
ACK_ROWS = 256
# Seconds a job's outcome may take to be written down once its code ended (a failure
# record waiting for a store's write lock, a release retried through a failover): past
# this the worker is stuck in its own settling and the sidecar replaces it.
SETTLING_BOUND = 120.0


def max_prefetch(concurrency: int) -> int:
    """The largest --prefetch whose rows fit the in-flight table beside `concurrency`
    running jobs."""
    return max(int((TABLE_ROWS - ACK_ROWS - concurrency) / 1.5), 1)


def capacity_error(prefetch: int, concurrency: int) -> str | None:
    """Why this prefetch and concurrency cannot fit one worker's in-flight table, or
    None when they fit."""
    if concurrency > MAX_CONCURRENCY:
        return (f"concurrency {concurrency} is more than {MAX_CONCURRENCY} jobs at once in "
                "one process; run more processes instead")
    most = max_prefetch(concurrency)
    if prefetch > most:
        return (f"prefetch {prefetch} with concurrency {concurrency} would hold more jobs "
                f"than a worker's in-flight table has rows ({TABLE_ROWS}): at most {most} "
                "at this concurrency")
    return None


@record(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """How one worker process behaves: its queues, retry defaults, limits and stops."""

    connection: str | None = None
    queues: tuple[str, ...] = ()  # priority order; empty: the connection's default queue
    name: str = "default"
    sleep: float = 3.0  # idle wait when not blocking (seconds)
    block_for: float | None = None  # None: the connection's block_for
    tries: int = 1  # for jobs that do not set tries; 0 = forever
    backoff: tuple[float, ...] = (0.0,)
    timeout: float = 60.0  # per job, unless the job sets one; 0 = none
    memory: int = 128  # MB of resident memory before the worker stops with exit 12
    max_jobs: int = 0  # 0 = no limit
    max_time: float = 0.0  # seconds; 0 = no limit
    rest: float = 0.0  # pause after each job (seconds)
    once: bool = False
    stop_when_empty: bool = False
    quiet: bool = False  # no per-job lines on stdout (the logging records still go out)
    log_level: str = "info"  # the least level of a per-job stdout line ("error": FAILED only)
    # seconds after the first stop signal (SIGTERM/SIGINT/SIGQUIT) that running jobs may
    # take to finish; what still runs then is handed back uncounted (worker/stopping.py)
    stop_timeout: float = 60.0
    kill_grace: float = 3.0  # seconds past a timeout before the sidecar kills a hung job's worker
    # most jobs reserved per round trip (1: no prefetch); the budget below sizes it for
    # jobs slower than 0.3 ms, so the cap only binds for near no-op ones: at 64 instead
    # of 32 they cost ~8% less CPU a job, worker and Redis together (2 processes)
    prefetch: int = 64
    prefetch_budget: float = 0.02  # seconds of expected work a prefetch may hold back
    sidecar: bool = True  # fork the watchdog that renews leases and enforces the hard timeout
    control_interval: float = 1.0  # how often restart/paused-queue flags are re-read
    reconnect_timeout: float = 60.0  # seconds without Redis before the worker exits 1
    concurrency: int = 1  # jobs in flight at once (threads for sync jobs, one event loop
    # for async def jobs); 1 runs each job in the main thread, Laravel's semantics


DEFAULTS = WorkerOptions()
