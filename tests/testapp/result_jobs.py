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


@job(tries=3, keep_result=60)
def retry_once_later(label, countdown):
    """Celery's self.retry: the first run asks to run again `countdown` s later."""
    from queueing import current_job, retry
    note(RESULT_ENDS, label=label)
    if current_job().attempts == 1:
        retry(countdown=countdown, exc=ValueError("not yet"))
    return current_job().attempts


@job(tries=1, keep_result=60)
def retry_with_no_tries_left(label):
    from queueing import retry
    note(RESULT_ENDS, label=label)
    retry(countdown=1, exc=ValueError("gave up after one try"))


@job(tries=1, keep_result=60)
def release_without_spending(label, times):
    """Laravel's $this->release(1), no try spent: runs `times` times on one try."""
    from queueing import current_job
    note(RESULT_ENDS, label=label)
    runs = len([n for n in notes_of(RESULT_ENDS) if n["label"] == label])
    if runs < times:
        current_job().release(0.5, spend_try=False)
    return {"runs": runs, "attempts": current_job().attempts}


def notes_of(key):
    from tests.testapp.jobs import notes
    return notes(key)


@job(keep_result=60)
async def add_async(a, b):
    import asyncio
    await asyncio.sleep(0.2)
    return a + b


@job(keep_result=60)
def return_a_secret(total):
    return {"api_key": "sk_live_lemur5512", "total": total}


@job(tries=1, keep_result=60)
def fails_then_takes_a_while(label, seconds):
    """Fails on its first run; a run after that (an operator's retry) sleeps, returns."""
    runs = len([n for n in notes_of(RESULT_ENDS) if n["label"] == label])
    note(RESULT_ENDS, label=label)
    if runs == 0:
        raise ValueError("first run fails")
    time.sleep(seconds)
    return "second run"


@job(tries=2)
def retry_past_a_higher_priority(label):
    """Celery priority 5 (ours -5): the first run dispatches a Celery-priority-2 job (ours
    -2), then retries at once. Back in its priority set, the retry runs after that job;
    gone to the ready list (priority lost), it would run before it."""
    from queueing import current_job, retry
    from tests.testapp.jobs import RAN, record
    note(RAN, label=f"{label}-{current_job().attempts}")
    if current_job().attempts == 1:
        record.apply_async(args=("two",), priority=2)
        retry(countdown=0)
