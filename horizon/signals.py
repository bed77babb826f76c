"""Signals Horizon sends from the master, for any code to hook (chat, paging, logs).

Both carry ``queue`` ("connection:queue"), ``seconds`` (the oldest ready job's age) and
``threshold`` (the HORIZON["waits"] limit); sender is the WaitMonitor.
"""
from django.dispatch import Signal

long_wait_detected = Signal()  # queue, seconds, threshold, repeat (bool)
long_wait_recovered = Signal()  # queue, seconds, threshold, lasted (seconds over the limit)
