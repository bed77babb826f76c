"""The /metrics token: where it is set, and how long it must be.

Read by the endpoint (horizon/dashboard/views/prometheus.py) and by the system check
``horizon.E012`` (horizon/checks.py), so the check need not import a view.
"""
from __future__ import annotations

import os

from django.conf import settings

MIN_TOKEN_LENGTH = 32


def configured_token() -> str:
    """``HORIZON_METRICS_TOKEN``: the setting, else the environment variable."""
    return str(getattr(settings, "HORIZON_METRICS_TOKEN", "") or
               os.environ.get("HORIZON_METRICS_TOKEN", ""))
