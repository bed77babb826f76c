"""The worker process (``manage.py runworker`` is a thin shell over ``loop.Worker``).

* ``loop.py``: the control loop: reserve, run, acknowledge, stop.
* ``job_runner.py``: runs one job and settles it (delete, release, fail).
* ``execution.py``: calls the job's code inside its context (also used inline by the
  sync driver).
* ``sidecar.py``: the forked watcher that renews leases and kills a hung job.
* ``process_control.py``: OS signals, interruptible sleeps, resident memory.
* ``heartbeat.py``, ``readiness.py``: liveness for the dashboard and the supervisor.
* ``database_use.py``: Django database connections around jobs.
* ``policy.py``: pure retry, backoff and prefetch arithmetic.
* ``options.py``: ``WorkerOptions`` and the worker defaults every caller reads.
* ``recorders.py``: completion recorders (metrics) fed with finished jobs.
"""
