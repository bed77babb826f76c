"""A module whose import takes a few milliseconds (tests/test_worker_truth.py reloads
it inside jobs, so interrupts aimed at those jobs often arrive during an import)."""
import time

time.sleep(0.003)
LOADED_AT = time.time()
