"""One policy for hiding secrets in everything an operator reads (pure functions).

Job arguments, exception messages and settings are written by application code, so any
of them may carry a password, an API token or a connection URL with credentials. The
dashboard, the worker and master log lines, ``queue_failed``, the debug page and
``embedded_redis status`` all pass text through this module, so a secret hidden in one
place is hidden in all of them.

Every function here costs time linear in its input: the patterns have bounded
repetition and no nested quantifiers, and URLs are found with ``str.find`` and parsed by
hand. (The old pattern ``[a-z][a-z0-9+.\\-]*://`` backtracked quadratically on long runs
of letters, so one 80,000-character exception could hold a dashboard worker for
seconds per request.) Deep structures are walked with an explicit stack, never by
recursion, and cut off past `MAX_DEPTH` with a readable placeholder.

Which keys are secret is configurable with ``HORIZON["mask_keys"]`` (it replaces
`DEFAULT_MASK_KEYS`; extend with ``[*DEFAULT_MASK_KEYS, "mine"]``). A list entry matches
a key when it equals one of the key's words (``api_key``, ``apiKey`` and ``X-Api-Key``
all have the word ``key``), or, for entries of five letters or more, when it appears
anywhere in the key with separators removed (``db_password``, ``csrftoken``).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

MASK = "********"
TOO_DEEP = "… too deeply nested to show …"
MAX_DEPTH = 64  # levels of a structure shown; deeper values become TOO_DEEP
LOG_LIMIT = 2000  # characters of one log-line field
CLIP_MARGIN = 512  # extra characters masked before a cut, so a cut never bares a secret

DEFAULT_MASK_KEYS: tuple[str, ...] = (
    "password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "apikey", "key",
    "keys", "auth", "oauth", "authorization", "credential", "private", "cookie", "session",
    "csrf", "pin", "otp", "totp", "dsn", "signature", "salt", "jwt", "bearer", "cvv", "cvc",
    "ssn", "creditcard", "cardnumber",
)

_WORDS = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")
_EXCEPTION_NAME = ("Error", "Exception", "Warning")


# -- which keys are secret ---------------------------------------------------------------
@lru_cache(maxsize=1)
def mask_keys() -> tuple[str, ...]:
    """The configured key list: ``HORIZON["mask_keys"]``, else `DEFAULT_MASK_KEYS`."""
    try:
        from django.conf import settings

        configured = (getattr(settings, "HORIZON", None) or {}).get("mask_keys")
    except Exception:  # settings not configured (a plain script): use the default
        configured = None
    if configured is None:
        return DEFAULT_MASK_KEYS
    return tuple(str(k).lower() for k in configured)


@receiver(setting_changed)
def _forget_mask_keys(*, setting: str, **_: Any) -> None:
    if setting == "HORIZON":
        mask_keys.cache_clear()


@lru_cache(maxsize=8192)
def _matches(key: str, entries: tuple[str, ...]) -> bool:
    key = key[:200]
    words = set(_WORDS.findall(_CAMEL.sub(" ", key).lower()))
    squashed = _SEPARATORS.sub("", key.lower())
    return any(entry in words or (len(entry) >= 5 and entry in squashed) for entry in entries)


def is_secret_key(key: object, entries: Iterable[str] | None = None) -> bool:
    """Does a mapping key (or a header name, or a ``key=`` in text) name a secret?"""
    if not isinstance(key, str) or not key:
        return False
    return _matches(key, tuple(entries) if entries is not None else mask_keys())


# -- secrets inside text -----------------------------------------------------------------
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}\Z")
_TOKEN_END = re.compile(r"[\s\"'<>`]")
_BEARER = re.compile(r"(?P<head>\b(?:bearer|basic|token|digest)\s{1,8})"
                     r"[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)
# key = value, key: value, "key": "value", \"key\": \"value\" (JSON in a JSON string),
# ?key=value, ["key", "value"]; every repetition is bounded.
_KEY = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z0-9_.\-]{1,64})(?P<close>\\?[\"']?)"
    r"(?P<sep>\s{0,8}(?:[:=]|,(?=\s{0,8}\\?[\"']))\s{0,8})")
# Read only after a secret key, so each value is read once.
_VALUE = re.compile(
    r"(?P<scheme>(?:bearer|basic|token|digest)\s{1,8})?"
    r"(?:\\\"(?P<edq>[^\"\\\n]{0,4096})\\\"|\"(?P<dq>[^\"\n]{0,4096})\"|'(?P<sq>[^'\n]{0,4096})'"
    r"|(?P<open>\\?[\"'])?(?P<bare>[^\s\"'&,;<>\\]+))",
    re.IGNORECASE)
_QUOTES = {"edq": '\\"', "dq": '"', "sq": "'"}
# Credentials recognisable by their own shape, with no key name in front: AWS access key
# ids, GitHub, Slack, Stripe and Google API tokens, JSON Web Tokens. Each starts with a
# literal prefix and has bounded repetition, so a scan stays linear.
_SHAPED = re.compile(
    r"\b(?:"
    r"(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}"  # AWS key ids
    r"|gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}"  # GitHub
    r"|xox[abposr]-[A-Za-z0-9\-]{10,255}"  # Slack
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,255}"  # Stripe secret and restricted keys
    r"|AIza[0-9A-Za-z_\-]{35}"  # Google API keys
    r"|eyJ[A-Za-z0-9_\-]{4,4096}\.eyJ[A-Za-z0-9_\-]{4,8192}\.[A-Za-z0-9_\-]{0,4096}"  # JWT
    r")(?![A-Za-z0-9])")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----")
_PEM_END = "-----END "


def _mask_url_passwords(text: str) -> str:
    """Hide the password of every ``scheme://user:password@host`` in `text`.

    The password runs from the first ``:`` after ``user`` to the last ``@`` of the
    token, so passwords holding ``/`` or ``@`` (``redis://u:p@ss@host``) are hidden whole.
    Each character is looked at a bounded number of times.
    """
    out: list[str] = []
    done = 0
    search_from = 0
    while True:
        at = text.find("://", search_from)
        if at < 0:
            break
        start = at + 3
        end_match = _TOKEN_END.search(text, start)
        end = end_match.start() if end_match else len(text)
        search_from = max(end, start)
        if not _SCHEME.search(text, max(0, at - 32), at):
            continue
        token = text[start:end]
        last_at = token.rfind("@")
        colon = token.find(":", 0, last_at) if last_at > 0 else -1
        if colon < 0 or "/" in token[:colon] or colon + 1 == last_at:
            continue  # no userinfo with a password (a ':' in a path, or an empty password)
        out.append(text[done:start + colon + 1])
        out.append(MASK)
        done = start + last_at
    out.append(text[done:])
    return "".join(out)


def _mask_key_values(text: str) -> str:
    """Hide the value after every secret-looking key.

    Keys are found first and a value is read only after a secret one, so the value of
    an ordinary key is still searched (``"url": "https://h/?password=x"``,
    ``"body": "{\\"token\\": …}"``) and every character is read a bounded number of
    times: linear.
    """
    out: list[str] = []
    done = pos = 0
    entries = mask_keys()
    while True:
        match = _KEY.search(text, pos)
        if match is None:
            break
        pos = match.end()
        key = match.group("key")
        if not is_secret_key(key, entries) or key.endswith(_EXCEPTION_NAME):
            continue  # "KeyError: 'x'" names an exception, not a key
        value = _VALUE.match(text, pos)
        if value is None:
            continue
        value_start = value.end("scheme") if value.group("scheme") else pos
        out.append(text[done:value_start])
        for group, quote in _QUOTES.items():
            if value.group(group) is not None:
                out.append(f"{quote}{MASK}{quote}" if value.group(group) else
                           text[value_start:value.end()])
                break
        else:
            out.append((value.group("open") or "") + MASK)
        done = pos = value.end()
    out.append(text[done:])
    return "".join(out)


def _mask_private_keys(text: str) -> str:
    """Hide the body of every PEM private key block (to its END line, or to the end)."""
    if "PRIVATE KEY-----" not in text:
        return text
    out: list[str] = []
    done = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < done:
            continue
        out.append(text[done:begin.end()])
        out.append(MASK)
        end = text.find(_PEM_END, begin.end())
        done = end if end >= 0 else len(text)
    out.append(text[done:])
    return "".join(out)


def mask_text(text: str) -> str:
    """`text` with URL passwords, bearer-style credentials, credential-shaped tokens
    (AWS key ids, GitHub, Slack, Stripe, Google, JWT), private keys and ``secret=…``
    values hidden."""
    if not text:
        return text
    text = _mask_url_passwords(text)
    text = _mask_private_keys(text)
    text = _SHAPED.sub(MASK, text)
    text = _BEARER.sub(lambda m: m.group("head") + MASK, text)
    return _mask_key_values(text)


def clip(text: str, limit: int | None) -> tuple[str, int]:
    """Mask `text`, keeping at most `limit` characters; also how many were left out.

    A little more than `limit` is masked before the cut, so a URL or ``password=`` that
    straddles the cut is still recognised and never shows its first characters.
    """
    if limit is None or len(text) <= limit:
        return mask_text(text), 0
    return mask_text(text[:limit + CLIP_MARGIN])[:limit], len(text) - limit


def display(text: str, limit: int | None) -> str:
    """A masked, clipped string for a page, saying how much was left out."""
    shown, hidden = clip(text, limit)
    return f"{shown}… [{hidden:,} more characters]" if hidden else shown


# -- secrets inside structures -----------------------------------------------------------
def _hidden(value: Any) -> bool:
    """Is there something to hide? Empty values and booleans show that they were empty."""
    return value not in (None, "") and not isinstance(value, bool)


def mask(value: Any, *, string_limit: int | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of decoded JSON with secrets hidden, strings clipped and depth bounded.

    Values of secret keys are replaced by `MASK`, as is the second item of a
    ``["X-Api-Key", value]`` header pair; strings are masked as text. Walked with an
    explicit stack, so any depth is safe; containers deeper than `max_depth` become the
    `TOO_DEEP` placeholder.
    """
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 0)]
    entries = mask_keys()
    while stack:
        item, parent, slot, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= max_depth:
                parent[slot] = TOO_DEEP
                continue
            out: dict = {}
            parent[slot] = out
            for key, child in item.items():
                if is_secret_key(key, entries) and _hidden(child):
                    out[key] = MASK
                else:
                    out[key] = None
                    stack.append((child, out, key, depth + 1))
        elif isinstance(item, (list, tuple)):
            if depth >= max_depth:
                parent[slot] = TOO_DEEP
                continue
            items = list(item)
            if (len(items) == 2 and is_secret_key(items[0], entries) and _hidden(items[1])):
                parent[slot] = [clip(items[0], string_limit)[0], MASK]
                continue
            out_list: list = [None] * len(items)
            parent[slot] = out_list
            for index, child in enumerate(items):
                stack.append((child, out_list, index, depth + 1))
        elif isinstance(item, str):
            parent[slot] = display(item, string_limit)
        else:
            parent[slot] = item
    return holder[0]


# -- log lines ---------------------------------------------------------------------------
def _control_escapes() -> dict[int, str]:
    table = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7f, 0xa0)]}
    table.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t",
                  0x2028: "\\u2028", 0x2029: "\\u2029"})
    return table


CONTROL_ESCAPES = _control_escapes()
_KEEP_NEWLINES = {code: text for code, text in CONTROL_ESCAPES.items() if code != ord("\n")}


def escape_control(text: str, *, keep_newlines: bool = False) -> str:
    """Control characters (newlines, ANSI escapes, NUL) written as visible escapes, so a
    job name or exception cannot forge log lines or drive the operator's terminal."""
    return text.translate(_KEEP_NEWLINES if keep_newlines else CONTROL_ESCAPES)


def for_log(value: object, limit: int = LOG_LIMIT) -> str:
    """One field of a log line: masked, clipped and on one line."""
    return escape_control(display(str(value), limit))


def redacted_url(url: str | None) -> str:
    """A connection URL with its password (in the userinfo or a query string) hidden."""
    return mask_text(url or "")


class RedactingFormatter(logging.Formatter):
    """A logging formatter applying this policy: the message masked and on one line
    (control characters escaped), the traceback masked with its newlines kept."""

    def format(self, record: logging.LogRecord) -> str:
        safe = logging.makeLogRecord(record.__dict__)
        safe.msg, safe.args = for_log(record.getMessage(), limit=LOG_LIMIT * 4), None
        # Another handler may have cached the traceback unmasked: format it again here.
        safe.exc_text = None if record.exc_info else (
            escape_control(mask_text(record.exc_text), keep_newlines=True)
            if record.exc_text else None)
        return super().format(safe)

    def formatException(self, ei) -> str:
        return escape_control(mask_text(super().formatException(ei)), keep_newlines=True)

    def formatStack(self, stack_info: str) -> str:
        return escape_control(mask_text(super().formatStack(stack_info)), keep_newlines=True)


def printable(value: Any, limit: int = 2000) -> str:
    """Text safe for one log line: secrets masked and control characters escaped (this
    module's policy), never an encoding error."""
    return for_log(str(value).encode("utf-8", "backslashreplace").decode("utf-8"), limit)
