"""The queue core's tables: the failed-job store (FailedJob), and the database driver's
jobs (QueuedJob), paused queues (PausedQueue) and control values (ControlValue)."""
from django.db import models
from django.utils import timezone

from queueing.settings import namespace as namespaces


class InNamespace(models.Manager["FailedJob"]):
    """Failed rows of the namespace keys are built in now (queueing/settings/namespace.py):
    the process's own, or the app a dashboard request names. Two apps that share a
    database (one project run under two namespaces) keep their failed jobs apart, and a
    retry can only push a row into the namespace it failed in."""

    def get_queryset(self) -> models.QuerySet["FailedJob"]:
        return super().get_queryset().filter(namespace=namespaces.current())


class FailedJob(models.Model):
    uuid = models.CharField(max_length=64, unique=True)
    connection = models.CharField(max_length=100)
    queue = models.CharField(max_length=100)
    job = models.CharField(max_length=255, blank=True, db_index=True,
                           help_text="The registered job name, when the payload had one.")
    payload = models.TextField(help_text="The entry exactly as it was reserved.")
    exception = models.TextField(help_text="Exception class, message and traceback.")
    failed_at = models.DateTimeField(default=timezone.now, db_index=True)
    tags = models.TextField(blank=True, null=True,
                            help_text="The payload's tags, one a line (NULL: stored before 0006).")
    exception_class = models.CharField(
        max_length=200, blank=True, null=True,
        help_text="The exception's class as the text starts with it (NULL: before 0006).")
    namespace = models.CharField(
        max_length=64, blank=True, default="", db_default="", db_index=True,
        help_text="The app's namespace it failed in (QUEUE['namespace']; '' for none).")

    objects = InNamespace()
    every_namespace = models.Manager()

    class Meta:
        ordering = ["-failed_at", "-id"]
        indexes = [models.Index(fields=["connection", "queue", "failed_at"]),
                   # covers the facets' and groups' reads of the newest rows (0006)
                   models.Index(fields=["failed_at", "id", "connection", "queue", "job",
                                        "exception_class"],
                                name="queueing_failed_facets_idx"),
                   models.Index(fields=["connection", "queue", "failed_at", "id", "job",
                                        "exception_class"],
                                name="queueing_failed_queue_facets")]

    def __str__(self) -> str:
        return f"{self.job or '?'} ({self.uuid}) failed at {self.failed_at:%Y-%m-%d %H:%M:%S}"


class QueuedJob(models.Model):
    """One job of a ``database`` connection's queue (the ``queueing_jobs`` table).

    Times are unix seconds (floats), like the Redis driver's scores. ``available_at`` is
    the next moment the job may be reserved: a pop sets it to the lease expiry, so an
    expired reservation is eligible again with no sweep, and one index serves the pop.
    A row is reserved while ``reserved_until`` is set and still in the future.
    ``attempts`` is authoritative: each delivery adds one, and the worker sees it in the
    payload it gets. ``deliveries`` also adds one per delivery but never goes back down
    (attempts do, when a prefetched job is handed back unstarted): (id, deliveries) names
    one delivery, so a handed-back delivery's token is never reused.
    """

    queue = models.CharField(max_length=100)
    payload = models.TextField(help_text="The same JSON payload the Redis driver stores.")
    attempts = models.PositiveIntegerField(default=0)
    # db_default: the previous release inserts rows without this column (migration 0009)
    deliveries = models.PositiveIntegerField(default=0, db_default=0)
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
    updated_at = models.FloatField(blank=True, null=True, db_index=True,
                                   help_text="Unix time of the last write (NULL: written "
                                             "before 0007).")

    class Meta:
        db_table = "queueing_control"


class BatchRecord(models.Model):
    """A batch of a ``database`` connection (docs/batches.md); the Redis driver keeps the
    same fields in a hash. Times are unix seconds; None: not yet."""

    id = models.CharField(max_length=64, primary_key=True)
    name = models.CharField(max_length=200, blank=True, default="", db_index=True)
    connection = models.CharField(max_length=100)
    queue = models.CharField(max_length=100)
    total = models.IntegerField(default=0)
    pending = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    succeeded = models.IntegerField(default=0)
    cancelled = models.IntegerField(default=0, help_text="Members skipped by a cancel.")
    allow_failures = models.BooleanField(default=False)
    first_failure = models.CharField(max_length=64, blank=True, default="")
    created_at = models.FloatField(db_index=True)
    finished_at = models.FloatField(null=True, blank=True)
    cancelled_at = models.FloatField(null=True, blank=True)
    then_at = models.FloatField(null=True, blank=True)
    catch_at = models.FloatField(null=True, blank=True)
    finally_at = models.FloatField(null=True, blank=True)
    callbacks = models.TextField(default="{}", help_text="JSON: kind -> payload, span.")

    class Meta:
        db_table = "queueing_batches"


class BatchMember(models.Model):
    """A settled member of a database-driver batch: member id -> its state."""

    batch = models.ForeignKey(BatchRecord, on_delete=models.CASCADE, related_name="members")
    member = models.CharField(max_length=64)
    state = models.CharField(max_length=80)

    class Meta:
        db_table = "queueing_batch_members"
        constraints = [models.UniqueConstraint(fields=["batch", "member"],
                                               name="queueing_batch_member_unique")]
