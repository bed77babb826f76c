"""Job results, opt-in and bounded (issue 50): ``@job(keep_result=<seconds>)``.

    handle = queueing.result_of(uuid)      # or my_job.apply_async(...) (queueing/celery.py)
    handle.status                          # pending, running, succeeded, failed, expired
    handle.get(timeout=5)                  # the return value; JobFailed / ResultExpired
    await handle.aget(timeout=5)
    handle.forget()

store.py keeps one result in Redis (its keys, TTLs, size cap and sealing); keeping.py is
what the worker calls around a job that keeps its result; waiting.py blocks on the
result's wake-up list; handle.py is what application code holds. A job that keeps no
result never reaches any of them: the worker's only cost is one flag check.
"""
from queueing.results.handle import ResultHandle, result_of
from queueing.results.store import JobFailed, ResultExpired, ResultTimeout, ResultTooLarge

__all__ = ["JobFailed", "ResultExpired", "ResultHandle", "ResultTimeout", "ResultTooLarge",
           "result_of"]
