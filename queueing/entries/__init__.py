"""The ground floor: the job entry every layer reads, with no I/O (issue 33).

* ``payload.py``: the JSON codec (build, encode, decode, peek) with ``shapes.py`` (the
  Payload a worker runs), ``options.py`` (per-job options), ``limits.py`` (size, depth
  and integer bounds) and ``payload_checks.py`` (the field rules a reserved entry must
  meet).
* ``batch_tag.py`` and ``batch_counting.py``: a batch member's tag, and the rules both
  batch stores count members by.
* ``context.py``: the job running in this context (``current_job()``).

The drivers import only this package, the contract and config.
"""
