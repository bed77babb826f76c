"""The standalone site that ``make run`` serves: settings with embedded defaults, the
URLs (dashboard, login, admin), the WSGI entry and ``manage.py serve`` (gunicorn and the
Horizon master under one parent). It is a project, not a reusable app: the wheel does
not carry it, and nothing in ``queueing`` or ``horizon`` imports it."""
