"""Django signals sent around each job, for logging, metrics and integrations.

Every signal is sent with ``sender`` = the worker (or None inline) and ``payload`` = the
decoded Payload (``job_failed`` may carry ``payload=None`` for undecodable entries).
"""
from django.dispatch import Signal

job_processing = Signal()  # payload, connection, queue
job_processed = Signal()  # payload, connection, queue, runtime (seconds)
job_exception_occurred = Signal()  # payload, connection, queue, exception, released (bool)
job_failed = Signal()  # payload, connection, queue, exception, reason
# payload, connection, queue, reason: stopped by its worker's fence (the store was
# unreachable), handed back uncounted; not a failure of the job
job_stopped = Signal()
worker_stopping = Signal()  # reason, exit_code
# A unique job was not dispatched because another with its id holds the lock. Sent with
# sender = the job's function or class; job (name), key (the lock), holder (its owner's
# uuid), args, kwargs.
job_unique_skipped = Signal()
# An operator released a held lock from the command line (queue_locks --release); sent
# with sender = None, lock (queueing.state.locks.HeldLock), by ("<os user> (cli)"). Horizon
# records it in its audit log; the dashboard's release records its own entry.
lock_released = Signal()
# An operator changed something from the command line (queue_retry, queue_clear,
# horizon_terminate, ...; queueing/management/cli_audit.py); sent with sender = None,
# action, target, detail and by ("<os user> (cli)"). Horizon records it in its audit log
# beside the dashboard's actions; without Horizon nobody listens.
operator_action = Signal()
# `queue_monitor --max N` found a queue holding more than N jobs (Laravel's QueueBusy);
# sent with sender = None, connection, queue, size, most (N) and reading
# (queueing.state.monitoring.QueueReading), once per such queue and run.
queue_busy = Signal()
