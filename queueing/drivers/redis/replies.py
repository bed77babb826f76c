"""redis-py's replies, narrowed in one place to what this code receives.

redis-py's stubs type every reply as a union of the RESP types (``bytes | str | ...``),
because a client made with ``decode_responses=True`` answers ``str``. Every client here
(``queueing.connections.make_client``, Horizon's) is made with the default
``decode_responses=False``, so a string reply is ``bytes``. These helpers say so, and
check it, instead of each caller casting.
"""
from __future__ import annotations

from typing import cast

from queueing.contract.redis_client import RedisClient

__all__ = ["RedisClient", "as_bytes", "as_str", "scored"]  # the client type: the contract's


def as_bytes(reply: object) -> bytes:
    """A string reply as the bytes a client without ``decode_responses`` answers."""
    if isinstance(reply, bytes):
        return reply
    if isinstance(reply, str):
        return reply.encode()
    raise TypeError(f"expected a string reply from Redis, got {type(reply).__name__}")


def as_str(reply: object) -> str:
    """A string reply decoded as UTF-8 text (keys, names, stamps)."""
    if isinstance(reply, bytes):
        return reply.decode()
    if isinstance(reply, str):
        return reply
    raise TypeError(f"expected a string reply from Redis, got {type(reply).__name__}")


def scored(reply: object) -> list[tuple[bytes, float]]:
    """A ``withscores`` range reply: (member, score) pairs."""
    # A cast, not a check: with decode_responses=False and the default score_cast_func
    # (float) the reply is exactly this, but the stubs cannot tie its shape to those
    # arguments, and checking every pair would cost a loop per dashboard read.
    return cast("list[tuple[bytes, float]]", reply)
