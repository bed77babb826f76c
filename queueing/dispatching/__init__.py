"""Declaring and dispatching jobs: ``jobs.py`` (``@job``, ``Job``, chains and
signatures), ``options.py`` (the per-job options and their checks), ``registry.py``
(the allowlist of jobs a worker may run), ``payload.py`` (the JSON codec) with
``payload_checks.py`` (its field rules), and ``dispatch.py`` (pushing to a driver,
after the caller's commit). The public names are re-exported by ``queueing``."""
