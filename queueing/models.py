"""The queue core's tables: the failed-job store (FailedJob), and the database driver's
jobs (QueuedJob), paused queues (PausedQueue) and control values (ControlValue)."""
from django.db import models
from django.utils import timezone


class FailedJob(models.Model):
    uuid = models.CharField(max_length=64, unique=True)
    connection = models.CharField(max_length=100)
    queue = models.CharField(max_length=100)
    job = models.CharField(max_length=255, blank=True, db_index=True,
                           help_text="The registered job name, when the payload had one.")
    payload = models.TextField(help_text="The entry exactly as it was reserved.")
    exception = models.TextField(help_text="Exception class, message and traceback.")
    failed_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-failed_at", "-id"]
        indexes = [models.Index(fields=["connection", "queue", "failed_at"])]

    def __str__(self) -> str:
        return f"{self.job or '?'} ({self.uuid}) failed at {self.failed_at:%Y-%m-%d %H:%M:%S}"


class QueuedJob(models.Model):
    """One job of a ``database`` connection's queue (the ``queueing_jobs`` table).

    Times are unix seconds (floats), like the Redis driver's scores. ``available_at`` is
    the next moment the job may be reserved: a pop sets it to the lease expiry, so an
    expired reservation is eligible again with no sweep, and one index serves the pop.
    A row is reserved while ``reserved_until`` is set and still in the future.
    ``attempts`` is authoritative: each delivery adds one, and the worker sees it in the
    payload it gets; (id, attempts) names one delivery.
    """

    queue = models.CharField(max_length=100)
    payload = models.TextField(help_text="The same JSON payload the Redis driver stores.")
    attempts = models.PositiveIntegerField(default=0)
    priority = models.IntegerField(default=0, help_text="Higher is reserved first.")
    available_at = models.FloatField(help_text="Unix time it may next be reserved.")
    reserved_until = models.FloatField(null=True, blank=True,
                                       help_text="Lease expiry while reserved.")
    reserved_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.FloatField(help_text="Unix time it was first queued.")

    class Meta:
        db_table = "queueing_jobs"
        ordering = ["-priority", "available_at", "id"]
        indexes = [
            # The pop: one queue, highest priority, then oldest available.
            models.Index(fields=["queue", "-priority", "available_at", "id"],
                         name="queueing_jobs_pop_idx"),
        ]

    def __str__(self) -> str:
        return f"job {self.id} on {self.queue} (attempts {self.attempts})"


class PausedQueue(models.Model):
    """A paused queue of a ``database`` connection; the pop query skips its jobs."""

    connection = models.CharField(max_length=100)
    queue = models.CharField(max_length=100)
    paused_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "queueing_paused_queues"
        constraints = [models.UniqueConstraint(fields=["connection", "queue"],
                                               name="queueing_paused_queue_unique")]


class ControlValue(models.Model):
    """Small shared values of ``database`` connections, e.g. the ``queue_restart`` stamp."""

    key = models.CharField(max_length=100, primary_key=True)
    value = models.TextField()

    class Meta:
        db_table = "queueing_control"
