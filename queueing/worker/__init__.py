"""The worker process (``manage.py runworker`` is a thin shell over ``loop.Worker``).

* ``loop.py``: the Worker: assembles the parts below, signals, the sidecar's keeper, stops.
* ``control_loop.py``: the one control loop: reserve, acknowledge, hand back, watch.
* ``reserving.py``: the store side of the loop (reserve, acknowledge, wait, control state).
* ``inline.py``, ``pool.py``, ``slots.py``: the executors: one job in the main thread, or
  N slots (sync jobs on threads, async jobs on one event loop).
* ``ledger.py``: where every settled job is written down (its row, its counts).
* ``interrupts.py``: timeouts and cancels raised only where they land in the job's code.
* ``stopping.py``: the stop bound (``--stop-timeout``): what still runs at it is handed
  back uncounted; a stop never fails a job.
* ``job_runner.py``: prepares, runs and settles one job; ``failing.py`` writes a final
  failure; ``abandoned.py`` settles what a dead or fenced worker left running.
* ``inflight.py``: the in-flight table shared with the sidecar.
* ``execution.py``: calls the job's code inside its context (also used inline by the
  sync driver).
* ``sidecar.py``: the forked watcher that renews leases, fences, and kills a hung job
  (``deadline.py``: its store calls' deadline; ``fork_child.py``: what the child sheds).
* ``startup.py``: the first contact with the store, waited for as a running worker waits.
* ``process_control.py``: OS signals, interruptible sleeps, resident memory.
* ``heartbeat.py``, ``readiness.py``: liveness for the dashboard and the supervisor.
* ``database_use.py``: Django database connections around jobs.
* ``policy.py``: pure retry, backoff and prefetch arithmetic.
* ``options.py``: ``WorkerOptions`` and the worker defaults every caller reads.
* ``recorders.py``: completion recorders (metrics) fed with finished jobs.
"""
