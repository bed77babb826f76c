"""Encrypted jobs: a payload whose arguments only the project's processes can read.

``@job(encrypted=True)``, ``.using(encrypted=True)`` or a connection's ``"encrypt": True``
(QUEUE['connections'][name]) seals what a job carries of the caller's data, its
``args``, its ``kwargs`` and its ``chain`` (the later links' arguments), into one
``encrypted`` field, so whoever reads Redis, the database driver's table, the failed
store, a batch record or a log sees ciphertext. Everything the queue itself needs
(uuid, job name, options, tags, timestamps) stays readable, so reserve, release, retry,
the metrics and the dashboard's lists work unchanged.

The cipher is Fernet from the ``cryptography`` package: AES-128-CBC with a random IV,
authenticated by HMAC-SHA256, so a token that was altered is refused, never decrypted
into something else. The sealed text also names the job, and opening checks it: a
token copied into another job's payload is refused too. The token field reads
``<key hint>.<Fernet token>``; the hint (8 hex digits of a hash of the derived key,
which tells nothing about it) says which key sealed it, so a worker that lacks that
key says so instead of guessing.

The keys come from ``SECRET_KEY``: HKDF-SHA256 with a purpose of its own (so the key is
not the one Django signs cookies with), one key per secret. New payloads are sealed with
``SECRET_KEY``; opening also takes each of ``SECRET_KEY_FALLBACKS``, which is how Django
rotates its secret: move the old one to the fallbacks, and jobs queued before the
rotation still run. A payload no key opens is refused with an error naming the cause;
the worker fails it into the failed store with its ciphertext kept, so a retry runs it
once the key is back (docs/encrypted-jobs.md).

Not protected: from anyone holding ``SECRET_KEY`` (or a fallback), and from the
dashboard's operate role (it shows the arguments, masked as any job's). Tags, the job's
name, a unique id or a rate-limit key derived from arguments are not sealed: they are
key names and labels the store must read.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings

from queueing.entries.payload_checks import check_sealed_fields
from queueing.entries.shapes import Payload
from queueing.errors import MalformedPayload, QueueError
from queueing.settings.config import queue_settings

if TYPE_CHECKING:
    from cryptography.fernet import Fernet

# The cipher's modules (about twenty of cryptography's) load with the first key, not with
# this module: every worker imports it to tell a sealed payload, few ever open one
# (issue 52).

FIELD = "encrypted"  # the payload field holding the token
SEALED = ("args", "kwargs", "chain")  # what the token holds
PURPOSE = b"queueing.entries.encryption: job arguments v1"
STANDS_IN = "(encrypted)"  # what a reader without the key is shown instead


class CannotDecrypt(MalformedPayload):
    """The sealed arguments cannot be opened with SECRET_KEY or any of its fallbacks."""


def _derived(secret: str | bytes) -> bytes:
    """The Fernet key (urlsafe base64 of 32 bytes) for one secret: HKDF, not the secret
    itself, so the cipher's key is never the key Django signs with."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    material = secret.encode("utf-8") if isinstance(secret, str) else secret
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(material)
    return base64.urlsafe_b64encode(key)


@lru_cache(maxsize=4)
def _keys(secrets: tuple[str | bytes, ...]) -> dict[str, Fernet]:
    """hint -> cipher, SECRET_KEY's first (cached per set of secrets, so a settings
    change in tests or a reload takes effect)."""
    from cryptography.fernet import Fernet

    keys: dict[str, Fernet] = {}
    for secret in secrets:
        key = _derived(secret)
        keys.setdefault(hashlib.sha256(b"hint:" + key).hexdigest()[:8], Fernet(key))
    return keys


def _secrets() -> tuple[str | bytes, ...]:
    fallbacks = getattr(settings, "SECRET_KEY_FALLBACKS", None) or ()
    return (settings.SECRET_KEY, *fallbacks)


def is_sealed(data: dict[str, Any]) -> bool:
    return FIELD in data


def wanted(encrypted: bool, connection: str | None, chain: list[dict] | None = None) -> bool:
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
    plain = {"job": data.get("job"), "args": data.get("args") or [],
             "kwargs": data.get("kwargs") or {}, "chain": chain}
    text = json.dumps(plain, separators=(",", ":"), allow_nan=False).encode("utf-8")
    hint, cipher = next(iter(_keys(_secrets()).items()))
    sealed = {k: v for k, v in data.items() if k not in SEALED}
    sealed[FIELD] = f"{hint}.{cipher.encrypt(text).decode('ascii')}"
    return sealed


def _refused(cause: str) -> CannotDecrypt:
    return CannotDecrypt(f"cannot decrypt the job's arguments: {cause}")


def _open_token(data: dict[str, Any]) -> dict[str, Any]:
    """The token's plaintext object; CannotDecrypt naming the cause."""
    token = data[FIELD]
    hint, _, fernet_token = token.partition(".") if isinstance(token, str) else ("", "", "")
    if not fernet_token or not token.isascii():
        raise _refused("the 'encrypted' field is not a token")
    cipher = _keys(_secrets()).get(hint)
    if cipher is None:
        raise _refused(
            "SECRET_KEY changed and the old key is not in SECRET_KEY_FALLBACKS (they were "
            "sealed with a key derived from neither SECRET_KEY nor any of its fallbacks); "
            "add the key they were dispatched with to SECRET_KEY_FALLBACKS, then retry")
    from cryptography.fernet import InvalidToken  # loaded by _keys

    try:
        text = cipher.decrypt(fernet_token.encode("ascii"))
    except InvalidToken:
        raise _refused("the token was altered (its authentication failed)") from None
    try:
        plain = json.loads(text)
    except ValueError:
        plain = None
    if not isinstance(plain, dict):
        raise _refused("they are not a JSON object")
    if plain.get("job") != data.get("job"):
        raise _refused("they were sealed for another job (the token was moved)")
    return plain


def opened(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its args, kwargs and chain decrypted (`data` itself if not sealed);
    raises CannotDecrypt naming the cause."""
    if FIELD not in data:
        return data
    plain = _open_token(data)
    out = {k: v for k, v in data.items() if k != FIELD}
    for key in SEALED:
        if key in plain:
            out[key] = plain[key]
    return out


def opened_job(job: Payload) -> Payload:
    """A decoded job ready to run: its arguments and chain decrypted and held to the
    rules of any payload's, while its ``data`` (what is written back to the store on a
    release or a failure) keeps the ciphertext. A plain job is returned as it is."""
    if FIELD not in job.data:
        return job
    plain = _open_token(job.data)
    try:
        args, kwargs, chain = check_sealed_fields(plain)
    except MalformedPayload as exc:
        raise _refused(f"the decrypted arguments are malformed: {exc}") from None
    return dataclasses.replace(job, args=args, kwargs=kwargs, chain=chain)


def seal_text(text: str) -> str:
    """Any text sealed with the current key (``<hint>.<token>``): a value a sealed job
    leaves behind beside its payload, such as a chord member's kept result."""
    hint, cipher = next(iter(_keys(_secrets()).items()))
    return f"{hint}.{cipher.encrypt(text.encode('utf-8', 'surrogatepass')).decode('ascii')}"


def open_text(sealed_text: str) -> str:
    """What `seal_text` sealed; CannotDecrypt naming the cause."""
    hint, _, token = sealed_text.partition(".")
    cipher = _keys(_secrets()).get(hint)
    if cipher is None or not token:
        raise _refused("no key in SECRET_KEY or its fallbacks sealed this value")
    from cryptography.fernet import InvalidToken  # loaded by _keys

    try:
        return cipher.decrypt(token.encode("ascii")).decode("utf-8", "surrogatepass")
    except (InvalidToken, UnicodeError):
        raise _refused("the token was altered (its authentication failed)") from None


def sealed_again(data: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """`data` (a plaintext payload, e.g. edited by an operator) sealed if `like` (the
    payload it came from) was: an edit never turns an encrypted job into a plain one."""
    return seal(data) if FIELD in like else data
