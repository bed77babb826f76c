"""Tell the audit log what an operator did from the command line.

The dashboard records every action it takes (horizon/audit.py); a retry, flush or
terminate typed in a shell left no trace, so "who deleted these failed jobs?" had no
answer when the answer was a terminal (issue 31). Commands call `audited` after they
succeeded, as the dashboard does. The queue core cannot import Horizon (it works without
it), so the entry travels as the `operator_action` signal, which Horizon's app connects
to its audit log.
"""
from __future__ import annotations

import getpass

from queueing.signals import operator_action


def cli_actor() -> str:
    """Who acted: the OS user running the command, marked as the command line's."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        user = "unknown"
    return f"{user} (cli)"


def audited(action: str, target: str, detail: str = "") -> None:
    """Record one action that succeeded, in the dashboard's words ("retry", "pause
    queue", ...) so the audit page reads the same whichever side acted."""
    operator_action.send(sender=None, action=action, target=target, detail=detail,
                         by=cli_actor())
