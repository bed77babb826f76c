"""The worker process (``manage.py runworker`` is a thin shell over ``loop.Worker``).

* ``loop.py``: the Worker: assembles the parts below, signals, the sidecar's keeper, stops.
* ``control_loop.py``: the one control loop, one turn function: reserve, acknowledge,
  hand back, watch.
* ``reserving.py``: the store side of the loop (reserve, acknowledge, wait, control state).
* ``inline.py``, ``pool.py``, ``slots.py``: the executors: one job in the main thread, or
  N slots (sync jobs on threads, async jobs on one event loop; the slot threads' own
  loop is ``job_runner.SlotThreads``, so a sync job's turn stays in one module).
* ``ledger.py``: the one owner of the in-flight table: every row's change, one call per
  phase (a round trip's acknowledgements and reservations, a claim, a job's code run
  between its RUNNING and ended marks, a plain success written down as it returns, any
  other settled job written down with its counts),
  written into the sidecar's shared memory as it is made; ``ledger_reads.py``: what
  the loop and the heartbeat read of it, and its signals to the sidecar.
* ``stopping.py``: the stop bound (``--stop-timeout``): what still runs at it is handed
  back uncounted; a stop never fails a job.
* ``job_runner.py``: checks and runs one job, and the slot threads' loop that takes each
  job so (``unrun.py``: settled without running,
  and the batch gate); ``settler.py`` settles it by its rules (its log lines are
  ``queueing/observability/job_log.py``'s ``JobLog``; ``failing.py`` writes a final
  failure; ``controls.py``, ``unrun.py``, ``model_args.py`` and ``stopping.py``
  are handed its narrow face, ``outcome.Settling``); ``abandoned.py`` settles what a
  dead or fenced worker left running, with a settler.
* ``table_memory.py``: the in-flight table's memory shared with the sidecar: its format
  and the sidecar's reader (the ledger writes it).
* ``execution.py``: the call: the job's code inside its context (also used inline by the
  sync driver), wrapped by the executor's interrupts (SIGALRM in the main thread, or a
  slot thread's), raised only where they land in the job's code (``landing.py`` says
  where that is); ``coroutines.py``: an ``async def`` job's coroutine run from sync code.
* ``sidecar.py``: the forked watcher that renews leases, fences, and kills a hung job
  (``deadline.py``: its store calls' deadline; ``fork_child.py``: what the child sheds;
  ``sched_time.py``: a grace counted in time the worker could run; ``settling.py``:
  settling a dead worker's rows).
* ``startup.py``: the first contact with the store, waited for as a running worker waits.
* ``process_control.py``: OS signals, interruptible sleeps, resident memory.
* ``heartbeat.py``, ``readiness.py``: liveness for the dashboard and the supervisor.
* ``database_use.py``: Django database connections around jobs.
* ``policy.py``: pure retry, backoff and prefetch arithmetic.
* ``options.py``: ``WorkerOptions`` and the worker defaults every caller reads.

The completion and outcome recorders the ledger feeds (Horizon's metrics, Prometheus'
counters) are ``queueing/observability/recorders.py``.
"""
