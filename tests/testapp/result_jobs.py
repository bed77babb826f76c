"""Jobs that keep their results, for tests/queueing/results (issue 50). Each notes when
its body ended, so a test can time how soon ``get`` returns after it."""
import time

from queueing import Job, job
from tests.testapp.jobs import note

RESULT_ENDS = "test:result-ends"
SEALED_SECRET = "quokka-ledger-9182"  # looked for everywhere in Redis


@job(keep_result=60)
def add_later(seconds, a, b):
    time.sleep(seconds)
    note(RESULT_ENDS, label=f"{a}+{b}")
    return {"sum": a + b}


@job(keep_result=60, tries=1)
def refuse_with(message):
    raise ValueError(message)


@job(keep_result=1)
def short_lived(value):
    return value


@job(keep_result=60, tries=1)
def return_bytes_of(size):
    return "x" * size


@job(keep_result=60, encrypted=True)
def sealed_answer(secret):
    return f"{secret}:{SEALED_SECRET}"


@job(keep_result=60, tries=1)
def sealed_refusal(secret):  # the message carries the secret: kept sealed too
    raise ValueError(f"declined {secret}")


class MultiplyLater(Job):
    keep_result = 60

    def handle(self, a, b, seconds=0.0):
        time.sleep(seconds)
        return a * b


@job
def keeps_nothing(value):
    return value
