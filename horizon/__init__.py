"""Horizon for Django: the operator side of ``queueing`` (supervisor, dashboard).

The standalone site that used to live here (settings, urls, wsgi, the ``serve``
launcher) is the top-level ``standalone`` package now, outside the wheel; its old module
paths still import, with a DeprecationWarning, until 0.4. So do the two login modules
a project names in its settings and urls (``AUTHENTICATION_BACKENDS``,
``DEFAULT_EXCEPTION_REPORTER_FILTER``, the login view), now in ``horizon/login/``.
"""
from queueing._moved import alias

SITE_MOVED = {
    "horizon.settings": "standalone.settings",
    "horizon.urls": "standalone.urls",
    "horizon.wsgi": "standalone.wsgi",
    "horizon.launcher": "standalone.launcher",
}
alias(SITE_MOVED)

LOGIN_MOVED = {  # moved in 0.3 (issue 49); the old paths go in 0.4
    "horizon.login_throttle": "horizon.login.throttle",
    "horizon.security": "horizon.login.security",
}
alias(LOGIN_MOVED)
