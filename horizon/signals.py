"""Signals Horizon sends from the master, for any code to hook (chat, paging, logs).

Both carry ``queue`` ("connection:queue"), ``seconds`` (the oldest ready job's age) and
``threshold`` (the HORIZON["waits"] limit); sender is the WaitMonitor.
"""
from django.dispatch import Signal

long_wait_detected = Signal()  # queue, seconds, threshold, repeat (bool)
long_wait_recovered = Signal()  # queue, seconds, threshold, lasted (seconds over the limit)
# Sent after each audit entry is written (dashboard and command-line actions alike), with
# ``entry`` (horizon.models.AuditEntry); sender is AuditEntry. For forwarding the audit
# log elsewhere (a SIEM, a chat channel); the horizon.audit logger carries it too.
audit_recorded = Signal()
