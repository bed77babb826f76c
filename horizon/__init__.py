"""Horizon for Django: the operator side of ``queueing`` (supervisor, dashboard).

The standalone site that used to live here (settings, urls, wsgi, the ``serve``
launcher) is the top-level ``standalone`` package now, outside the wheel; its old module
paths still import, with a DeprecationWarning, until 0.4. So does the login throttle a
project names in ``AUTHENTICATION_BACKENDS``, now in ``horizon/login/``.
"""
from queueing._moved import alias

SITE_MOVED = {
    "horizon.settings": "standalone.settings",
    "horizon.urls": "standalone.urls",
    "horizon.wsgi": "standalone.wsgi",
    "horizon.launcher": "standalone.launcher",
}
alias(SITE_MOVED)

LOGIN_MOVED = {  # moved in 0.3 (issue 49); the old path goes in 0.4
    "horizon.login_throttle": "horizon.login.throttle",
}
alias(LOGIN_MOVED)
