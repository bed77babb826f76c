"""The standalone site's generated secret key: created once, race-free, owner-only.

Why not "if missing, create with O_EXCL and write": two first starts at once (gunicorn
workers, a master and a web process started together) raced there. One process
created the file, the other saw it exist and read it while still empty (an empty
SECRET_KEY), or lost the O_EXCL create and crashed with FileExistsError. Here the key
is written whole to a private temporary file and then hard-linked into place: the link
either appears with its full content or fails because another process got there first,
and every process then reads the one key that won.
"""
from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path


def read_or_create(path: Path) -> str:
    """The key stored at `path`, generating and storing one first if there is none."""
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    fd, temporary = tempfile.mkstemp(prefix=".secret_key-", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process stored its key first: use that one
    finally:
        os.unlink(temporary)
    return path.read_text().strip()
