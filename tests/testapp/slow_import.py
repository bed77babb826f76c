"""A module whose import takes a few milliseconds (tests/queueing/worker/test_worker_truth.py reloads
it in a thread, to see where an interrupt would land during an import)."""
import time

time.sleep(0.003)
LOADED_AT = time.time()
