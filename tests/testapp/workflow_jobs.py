"""Jobs of the workflow tests (group, chord, chains of groups); imported by jobs.py.
Each records what happened in Redis (tests.testapp.jobs.note)."""
import time

from queueing import job
from tests.testapp.jobs import RAN, note


@job(tries=3, backoff=0)
def square(index, seconds=0.0):
    """A chord member: returns its result (index squared), after `seconds`."""
    if seconds:
        time.sleep(seconds)
    note(RAN, label="square", index=index)
    return index * index


@job
def collect(results, label):
    """A chord callback: records the results it was given."""
    note(RAN, label=label, results=results)


@job
def step(label, index=0):
    note(RAN, label=label, index=index, t=time.time())


@job(tries=1)
def too_big(size):
    return "x" * size
