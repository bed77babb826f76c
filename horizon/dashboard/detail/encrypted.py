"""What the dashboard shows of an encrypted job (queueing/entries/encryption.py).

Staff with the operate ("full") role see its arguments decrypted, then masked as any
job's are: they can retry it and edit its arguments, so they are trusted with them. The
read-only role sees that the arguments are encrypted, never the ciphertext nor the
plaintext: the job page gets a payload whose token is replaced by a marker before any
of it is rendered, and list rows never decrypt (one preview line says "(encrypted)").
"""
from __future__ import annotations

import dataclasses

from horizon.dashboard.jobs.lookup import Found
from queueing.entries import encryption

READ_ONLY_NOTE = ("The arguments of this job are encrypted; staff with the operate role "
                  "see them (masked).")
PREVIEW = encryption.STANDS_IN


def hidden(data: dict) -> dict:
    """`data` with its token replaced by the marker: what a reader without the key sees."""
    return {**data, encryption.FIELD: encryption.STANDS_IN}


def for_viewer(found: Found, can_operate: bool) -> tuple[Found, str]:
    """The job as this viewer may see it, and a note for the page ("" for a plain job).

    A payload the key cannot open is shown hidden to everyone, with the reason (which
    names the cause, never the content)."""
    if not encryption.is_sealed(found.data):
        return found, ""
    if not can_operate:
        return dataclasses.replace(found, data=hidden(found.data)), READ_ONLY_NOTE
    try:
        data = encryption.opened(found.data)
    except encryption.CannotDecrypt as exc:
        return dataclasses.replace(found, data=hidden(found.data)), str(exc)
    return dataclasses.replace(found, data=data), (
        "The arguments of this job are encrypted in the store; shown here decrypted, "
        "masked.")
