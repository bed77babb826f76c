"""Encrypted jobs: a payload whose arguments only the project's processes can read.

``@job(encrypted=True)``, ``.using(encrypted=True)`` or a connection's ``"encrypt": True``
(QUEUE['connections'][name]) seals what a job carries of the caller's data, its
``args``, its ``kwargs`` and its ``chain`` (the later links' arguments), into one
``encrypted`` field: a Fernet token (AES-128-CBC and HMAC-SHA256, from the
``cryptography`` package), so whoever reads Redis, the database driver's table, the
failed store, a batch record or a log sees ciphertext. Everything the queue itself needs
(uuid, job name, options, tags, timestamps) stays readable, so reserve, release, retry,
the metrics and the dashboard's lists work unchanged.

The keys come from ``SECRET_KEY``: HKDF-SHA256 with a purpose of its own (so the key is
not the one Django signs cookies with), one key per secret. New payloads are sealed with
``SECRET_KEY``; opening tries it, then each of ``SECRET_KEY_FALLBACKS``, which is how
Django rotates its secret: move the old one to the fallbacks, and jobs queued before the
rotation still run. A payload no key opens is refused with an error naming the cause;
the worker fails it into the failed store with its ciphertext kept, so a retry runs it
once the key is back (docs/operations.md, "Encrypted jobs").

Not protected: anyone holding ``SECRET_KEY`` (or a fallback) and the dashboard's operate
role (it shows the arguments, masked as any job's). Tags, the job's name, a unique id
or a rate-limit key derived from arguments are not sealed: they are key names and
labels the store must read.
"""
from __future__ import annotations

import base64
import dataclasses
import json
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from queueing.config import queue_settings
from queueing.entries.payload_checks import validate
from queueing.entries.shapes import Payload
from queueing.errors import MalformedPayload, QueueError

FIELD = "encrypted"  # the payload field holding the token
SEALED = ("args", "kwargs", "chain")  # what the token holds
PURPOSE = b"queueing.entries.encryption: job arguments v1"
STANDS_IN = "(encrypted)"  # what a reader without the key is shown instead


class CannotDecrypt(MalformedPayload):
    """The sealed arguments cannot be opened with SECRET_KEY or any of its fallbacks."""


def _derived(secret: str | bytes) -> bytes:
    """The Fernet key (urlsafe base64 of 32 bytes) for one secret: HKDF, not the secret
    itself, so the cipher's key is never the key Django signs with."""
    material = secret.encode("utf-8") if isinstance(secret, str) else secret
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(material)
    return base64.urlsafe_b64encode(key)


@lru_cache(maxsize=4)
def _cipher(secrets: tuple[str | bytes, ...]) -> MultiFernet:
    """Seals with the first secret's key, opens with any (cached per set of secrets, so
    a settings change in tests or a reload takes effect)."""
    return MultiFernet([Fernet(_derived(secret)) for secret in secrets])


def _secrets() -> tuple[str | bytes, ...]:
    fallbacks = getattr(settings, "SECRET_KEY_FALLBACKS", None) or ()
    return (settings.SECRET_KEY, *fallbacks)


def is_sealed(data: dict[str, Any]) -> bool:
    return FIELD in data


def wanted(encrypted: bool, connection: str, chain: list[dict] | None = None) -> bool:
    """Is a payload to be sealed: the job asks, its connection encrypts everything, or a
    later link of its chain asks for either (its arguments travel in this payload)."""
    if encrypted or _connection_encrypts(connection):
        return True
    for link in chain or ():
        options = link.get("options") or {}
        if options.get("encrypted") or _connection_encrypts(options.get("connection")):
            return True
    return False


def _connection_encrypts(name: str | None) -> bool:
    try:
        return queue_settings().connection(name).encrypt
    except QueueError:  # an unknown connection is refused by dispatch itself
        return False


def seal(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its args, kwargs and chain replaced by one token, in their place (the
    end of the payload). Each chain link is marked encrypted, so the worker dispatches
    the next link sealed too."""
    chain = [{**link, "options": {**(link.get("options") or {}), "encrypted": True}}
             for link in data.get("chain") or ()]
    plain = {"args": data.get("args") or [], "kwargs": data.get("kwargs") or {},
             "chain": chain}
    text = json.dumps(plain, separators=(",", ":"), allow_nan=False).encode("utf-8")
    token = _cipher(_secrets()).encrypt(text).decode("ascii")
    sealed = {k: v for k, v in data.items() if k not in SEALED}
    sealed[FIELD] = token
    return sealed


def opened(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its args, kwargs and chain decrypted (`data` itself if not sealed);
    raises CannotDecrypt naming the cause."""
    if FIELD not in data:
        return data
    token = data[FIELD]
    if not isinstance(token, str) or not token.isascii():
        raise CannotDecrypt("cannot decrypt the job's arguments: the 'encrypted' field is "
                            "not a token")
    try:
        text = _cipher(_secrets()).decrypt(token.encode("ascii"))
    except InvalidToken:
        raise CannotDecrypt(
            "cannot decrypt the job's arguments: neither SECRET_KEY nor any of "
            "SECRET_KEY_FALLBACKS opens them (SECRET_KEY changed and the old key is not "
            "in SECRET_KEY_FALLBACKS, or the payload was altered); put the key it was "
            "dispatched with in SECRET_KEY_FALLBACKS, then retry it") from None
    try:
        plain = json.loads(text)
    except ValueError:
        plain = None
    if not isinstance(plain, dict):
        raise CannotDecrypt("cannot decrypt the job's arguments: they are not a JSON object")
    out = {k: v for k, v in data.items() if k != FIELD}
    for key in SEALED:
        if key in plain:
            out[key] = plain[key]
    return out


def opened_job(job: Payload) -> Payload:
    """A decoded job ready to run: its arguments and chain decrypted and checked as any
    payload's are, while its ``data`` (what is written back to the store on a release
    or a failure) keeps the ciphertext. A plain job is returned as it is."""
    if FIELD not in job.data:
        return job
    try:
        checked = validate(opened(job.data), job.original)
    except CannotDecrypt:
        raise
    except MalformedPayload as exc:
        raise CannotDecrypt(f"decrypted arguments are malformed: {exc}") from None
    return dataclasses.replace(checked, data=job.data)


def sealed_again(data: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """`data` (a plaintext payload, e.g. edited by an operator) sealed if `like` (the
    payload it came from) was: an edit never turns an encrypted job into a plain one."""
    return seal(data) if FIELD in like else data
