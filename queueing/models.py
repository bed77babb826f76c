"""The failed-job store: one row per job that failed for good (or could not be decoded)."""
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
