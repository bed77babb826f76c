#!/usr/bin/env python
"""Django's command-line utility for the standalone Horizon site."""
import os
import sys


def main() -> None:
    if sys.argv[1:2] == ["runworker"]:  # its signals from the first instant, before Django
        import queueing  # noqa: F401  (queueing/worker/early_signals.py)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "standalone.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
